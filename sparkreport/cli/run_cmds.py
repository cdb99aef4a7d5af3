"""`sparkreport run`: execute a benchmark campaign into the run store.

Imports only the light execute package (no pandas, scipy or mkdocs), so it works on a GPU
machine that has only click, PyYAML, nvidia-ml-py and the workload's own stack.
"""

from __future__ import annotations

from pathlib import Path

import click

from sparkreport.cli.options import runs_dir_option


@click.command("run")
@click.argument("campaign_file", metavar="CAMPAIGN.yaml", type=click.Path(path_type=Path, dir_okay=False))
@runs_dir_option
@click.option("--dry-run", is_flag=True, help="Print the plan and its estimated duration; run nothing.")
@click.option("--resume", is_flag=True,
              help="Finish an interrupted campaign: run only the cells that have no run folder yet.")
@click.option("--quiet", "-q", is_flag=True, help="No progress output; warnings, errors and the summary only.")
@click.option("--cluster", metavar="ADDRESS",
              help="Run the cells as Ray tasks: ray://HOST:PORT (Ray Client), HOST:PORT or auto (a node of the "
                   "cluster), or local (start Ray here). Needs the `ray` extra here and on every node.")
@click.option("--gpus-per-run", type=click.FloatRange(min=0), default=1.0, show_default=True,
              help="With --cluster: GPUs each run asks Ray for (one benchmark per GPU); 0 for a CPU-only workload.")
@click.option("--retries", type=click.IntRange(min=0), default=3, show_default=True,
              help="With --cluster: times Ray reruns a run whose worker or node died.")
def run_command(campaign_file: Path, runs_dir: Path, dry_run: bool, resume: bool, quiet: bool,
                cluster: str | None, gpus_per_run: float, retries: int) -> None:
    """Run the benchmark campaign CAMPAIGN.yaml into RUNS_DIR/<campaign>/.

    The plan crosses models × environments × cache states × iterations, in randomized
    blocks (seeded, recorded) or sequentially. Before each run the GPU cools down; during it
    a sampler records NVML, /proc/meminfo and cgroup memory. Each run becomes one folder
    (run.json + logs + samples.csv.gz); a failed run is recorded and the campaign goes on.
    Exit 1 when a run failed or cells were left (interrupted, environment unavailable).

    A guard (the campaign's `guard:` block, on by default) kills a run whose MemAvailable falls below
    `min_available_gib` (default 4 GiB) or that shows no progress for `stall_s` (default 600 s),
    records it as failed with the reason, and goes on (or stops: `on_breach: stop`; --resume
    continues). Benchmark processes get oom_score_adj 1000, so the kernel's OOM killer takes them first.

    With --cluster the cells are Ray tasks asking for --gpus-per-run GPUs each, spread over the
    cluster's nodes (cooldown per node and GPU); results stream back into RUNS_DIR here. A run
    lost with its node is retried, then reported, and `--resume` reruns it.

    \b
    Example campaign (campaigns/smoke-fake.yaml):
      campaign: smoke-fake
      models: [{name: small, params: {throughput_tok_s: 120}}]
      environments: [{kind: native}, {kind: cgroup, memory_limit: 4GiB}]
      workload: {kind: fake, sleep_s: 0.1}
      iterations: 3
      cooldown: {min_s: 0}
    """
    from sparkreport.execute.campaign import load_campaign
    from sparkreport.execute.plan import format_duration
    from sparkreport.execute.runner import RunOptions, run_campaign

    campaign = load_campaign(campaign_file)
    options = RunOptions(runs_dir=runs_dir, dry_run=dry_run, resume=resume, quiet=quiet)
    if cluster:
        from sparkreport.execute.cluster import ClusterOptions, run_on_cluster  # imports Ray only on this path

        report = run_on_cluster(campaign, options, ClusterOptions(cluster, gpus_per_run, retries))
    else:
        report = run_campaign(campaign, options)
    if dry_run:
        return
    folder = runs_dir / campaign.name
    parts = report.summary_parts()
    if report.already:
        parts.append(f"{len(report.already)} already present")
    if report.skipped:
        parts.append(f"{len(report.skipped)} skipped (environment unavailable)")
    if report.lost:
        parts.append(f"{len(report.lost)} lost (worker or node died)")
    click.echo(f"{', '.join(parts)} → {folder}")
    again = f"sparkreport run {campaign_file}"
    if cluster:
        again += f" --cluster {cluster}" + ("" if gpus_per_run == 1 else f" --gpus-per-run {gpus_per_run:g}")
    if report.interrupted:
        pending = report.planned - len(report.already) - len(report.written) - len(report.failed)
        raise click.ClickException(
            f"interrupted with {pending} run(s) left — `{again} --resume` finishes it "
            f"(about {format_duration(report.estimate_s)} in all was planned)")
    if report.stopped is not None:
        raise click.ClickException(
            f"stopped by the guard (guard.on_breach: stop) after {report.stopped} — fix the cause, then "
            f"`{again} --resume` runs the rest")
    if report.lost:
        raise click.ClickException(
            f"{len(report.lost)} run(s) lost with their worker or node — `{again} --resume` runs them")
    if report.failed or report.skipped:
        raise SystemExit(1)
