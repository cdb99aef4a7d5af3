"""``sparkreport scrub``: rewrite an existing run store down to the environment allowlist."""

from __future__ import annotations

from pathlib import Path

import click

from sparkreport.cli.options import runs_dir_option


@click.command("scrub")
@runs_dir_option
@click.option("--dry-run", is_flag=True, help="Say what would change; write nothing.")
def scrub_command(runs_dir: Path, dry_run: bool) -> None:
    """Remove environment values and credentials from an existing run store.

    \b
    Rewrites, in place and atomically per file: run.json (env_vars down to the
    allowlist, credential shapes scrubbed), the raw files beside it (gzip included;
    docker inspect's Config.Env down to the allowlist; the values of the dropped
    variables scrubbed), and _campaign/ and _sources/. Everything else stays byte for
    byte; a second run changes nothing. Prints counts per kind, never a value.
    """
    from sparkreport.scrub import scrub_store

    if not runs_dir.is_dir():
        raise click.ClickException(f"{runs_dir}: no run store here — pass --runs-dir DIR (the folder holding "
                                   "<campaign>/<run_id>/run.json)")
    report = scrub_store(runs_dir, dry_run=dry_run)
    for line in report.lines():
        click.echo(line)
