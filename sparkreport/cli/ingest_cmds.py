"""`sparkreport ingest`, `formats` and `metrics`."""

from __future__ import annotations

from pathlib import Path

import click

from sparkreport.cli.options import parse_labels, runs_dir_option


@click.command("ingest")
@click.argument("sources", nargs=-1, required=True, type=click.Path(path_type=Path))
@runs_dir_option
@click.option("--campaign", help="Campaign name (default: what the source names, else per format).")
@click.option("--label", "labels", multiple=True, metavar="KEY=VALUE",
              help="Set a label on every run ingested (repeatable), e.g. software.trtllm=1.2.0rc3.")
@click.option("--environment", metavar="NAME",
              help="The environment every run ran in (native, docker, …): trtllm-bench and vLLM output "
                   "do not record it, and the statistics group runs by campaign, model and environment.")
@click.option("--format", "format_name", metavar="NAME",
              help="Skip detection and read every file as this format (see `sparkreport formats`).")
@click.option("--quiet", "-q", is_flag=True, help="Print only the summary line and errors.")
@click.option("--wait", "wait_s", type=click.FloatRange(min=0), default=600, show_default=True, metavar="SECONDS",
              help="How long to wait for another sparkreport process writing to the same run store.")
def ingest_command(sources: tuple[Path, ...], runs_dir: Path, campaign: str | None,
                   labels: tuple[str, ...], environment: str | None, format_name: str | None,
                   quiet: bool, wait_s: float) -> None:
    """Ingest existing results (files or folders) into the run store.

    The format is detected from each file's content. Files that cannot be read are
    reported one line each (file, line, fix); the others are still ingested, and so is
    every run of a file but those with impossible values (negative throughput, memory or
    latency; temperatures outside -40…150 °C), which are rejected with the reason. Exit 1
    when anything was rejected. A run whose folder lost its run.json is written anew; one
    ingest writes to a store at a time (a second one waits, see --wait).
    """
    from sparkreport.errors import OptionError
    from sparkreport.ingest import PARSERS, IngestOptions, ingest_paths
    from sparkreport.schema import slug
    from sparkreport.store import RunStore

    if format_name is not None and format_name not in PARSERS:  # before any file is read
        raise OptionError("--format", f"unknown format {format_name!r}",
                          fix=f"choose one of: {', '.join(PARSERS)} (`sparkreport formats`)")

    options = IngestOptions(campaign=campaign, labels=parse_labels(labels), format=format_name,
                            environment=slug(environment) if environment else None, lock_wait_s=wait_s,
                            notify=lambda text: click.echo(f"note: {text}", err=True))
    report = ingest_paths(list(sources), RunStore(runs_dir), options)
    if not quiet:
        recreated = set(report.recreated)
        for run_id in report.added:
            click.echo(f"{'re-made' if run_id in recreated else 'added  '}  {run_id}")
        for run_id in report.skipped:
            click.echo(f"present  {run_id}")
    for error in report.rejected:
        click.echo(f"error: {error.format_message()}", err=True)
    click.echo(
        f"{len(report.added)} added, {len(report.skipped)} already present, "
        f"{len(report.rejected)} rejected → {runs_dir}"
    )
    if report.rejected:
        raise SystemExit(1)


@click.command("formats")
def formats_command() -> None:
    """List the input formats ingest recognizes."""
    from sparkreport.ingest import PARSERS

    width = max(len(name) for name in PARSERS)
    for name, cls in PARSERS.items():
        click.echo(f"{name:<{width}}  {cls.description}")
        if cls.versions:
            click.echo(f"{'':<{width}}  versions: {cls.versions}")


@click.command("metrics")
def metrics_command() -> None:
    """List the canonical metric names, their units and which direction is better.

    Percentiles are listed for the stats the parsers write; any other percentile is a metric too,
    as FAMILY_pN (p99.9 is p99_9).
    """
    from sparkreport import metrics

    for name in metrics.all_names():
        metric = metrics.lookup(name)
        assert metric is not None
        click.echo(f"{name:<36} {metric.unit or '-':<9} {metric.direction:<7} {metric.label}")
