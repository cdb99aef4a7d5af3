"""`sparkreport init`: scaffold a new report project."""

from __future__ import annotations

from pathlib import Path

import click


@click.command("init")
@click.argument("directory", type=click.Path(path_type=Path, file_okay=False), default=".")
@click.option("--force", is_flag=True, help="Write into a folder that is not empty (files of the same name "
                                            "are replaced; nothing else is touched).")
def init_command(directory: Path, force: bool) -> None:
    """Scaffold a report project in DIRECTORY (default: here) that builds with `sparkreport build`.

    Writes mkdocs.yml, sparkreport.yml, docs/ (with an example blog post), examples/ and runs/
    (made-up example figures, ingested), templates/README.md (how to override the pages by name)
    and .github/workflows (build and deploy to GitHub Pages; a diff comment on pull requests).
    """
    from sparkreport.scaffold import init_project

    result = init_project(directory, force=force)
    click.echo(f"{len(result.files)} files and {result.runs} example arms → {result.root}")
    shown = "" if directory.resolve() == Path.cwd().resolve() else f"cd {directory} && "
    click.echo(f"next: {shown}sparkreport build   (then open site/index.html)")
