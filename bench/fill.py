"""What each generated page costs to fill, as a build's fill worker fills it.

Prints figures; asserts nothing. In the current folder (a project: its ``sparkreport.yml``,
``runs/`` and the ``build/cache`` an earlier build left), loads the dataset and the analysis
through the build's caches, plans every page as a render does, then fills each page (``--pages``,
else every one) in a process forked for it — as a fill worker is forked after planning: with
what planning computed, none of what the other pages' fills would have — and prints the CPU
seconds of its fill (the least of ``--repeat`` forks), the longest first, and their sum. The
files a fill writes go to a temporary folder. ``--profile DIR`` keeps a cProfile of each page's
first fill (``DIR/<page path with / as _>.prof``).

The pages' keys are made without the render's configuration and package parts, so what is kept
by a page's key (the Results overview's row of each model) is made again here: the overview's
figure is what a build that changed every model would pay; and the Downloads page writes its
files here, which a build writes beside the analysis in a process of its own. A new run's build
fills 13–15 of these pages, split between two workers (``bench/timeline.py --procs``: their CPU).

    cd build/bench/n10000/project && python /path/to/bench/fill.py --pages results/index.md,memory/index.md
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sparkreport.render.pages import PageDoc

# This checkout's code, whatever copy of sparkreport is installed (the script runs in a project's folder).
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", default="", help="page paths, comma-separated (default: every page)")
    parser.add_argument("--repeat", type=int, default=3, help="forks a page, the least CPU kept (default 3)")
    parser.add_argument("--profile", type=Path, help="a folder for a cProfile of each page's first fill")
    args = parser.parse_args()

    from sparkreport.dataset import load_dataset
    from sparkreport.project import resolve_project
    from sparkreport.render.context import build_site_data
    from sparkreport.render.core import RenderOptions, read_records_per_campaign
    from sparkreport.render.markdown import make_environment
    from sparkreport.render.pagecache import PageKeys
    from sparkreport.render.pages import registered_pages
    from sparkreport.render.report import prime_effect_rows

    project = resolve_project(RenderOptions(project_root=Path.cwd()))
    dataset = load_dataset(project.runs_dir, cache_dir=project.cache_dir)
    site = build_site_data(dataset, project.config, project.runs_dir, project.command, project.root,
                           cache_dir=project.cache_dir, save=False)
    read_records_per_campaign(site)
    prime_effect_rows(site)
    with tempfile.TemporaryDirectory() as out:
        planned = [(page, page.docs(site, Path(out))) for page in registered_pages()]
        keys = PageKeys(site, make_environment(project.root / "templates", None), [])
        for page, docs in planned:
            for doc in docs:
                doc.key = keys.key(page.name, doc, keys.footer(doc))
        by_path = {doc.path: doc for _page, page_docs in planned for doc in page_docs}
        wanted = [path for path in args.pages.split(",") if path] or list(by_path)
        unknown = [path for path in wanted if path not in by_path]
        if unknown:
            sys.exit(f"no such page: {', '.join(unknown)} (the pages: {', '.join(sorted(by_path)[:8])}, …)")
        if args.profile is not None:
            args.profile.mkdir(parents=True, exist_ok=True)
        seconds = {path: min(_fill_in_a_fork(by_path[path], args.profile if run == 0 else None)
                             for run in range(max(1, args.repeat))) for path in wanted}
    for path, cpu in sorted(seconds.items(), key=lambda item: -item[1]):
        print(f"{cpu:7.4f} s  {path}")
    print(f"{sum(seconds.values()):7.4f} s  in all ({len(seconds)} pages, each in a fork of its own)")


def _fill_in_a_fork(doc: PageDoc, profile: Path | None) -> float:
    """The CPU seconds of ``doc.fill()`` in a process forked for it."""
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:  # the fork: fill, write the CPU seconds, leave at once
        os.close(reader)
        code = 0
        try:
            profiler = None
            if profile is not None:
                import cProfile

                profiler = cProfile.Profile()
                profiler.enable()
            from sparkreport.render.pages import fill

            began = time.process_time()
            fill(doc)  # (as the render's workers do)
            used = time.process_time() - began
            if profiler is not None and profile is not None:
                profiler.disable()
                profiler.dump_stats(profile / (doc.path.replace("/", "_") + ".prof"))
            os.write(writer, repr(used).encode())
        except BaseException as exc:  # noqa: BLE001 — reported by the parent, as a failed fill
            os.write(writer, f"error {exc!r}".encode())
            code = 1
        finally:
            os._exit(code)
    os.close(writer)
    with os.fdopen(reader, "rb") as answer:
        text = answer.read().decode()
    os.waitpid(pid, 0)
    if text.startswith("error"):
        sys.exit(f"{doc.path}: its fill failed: {text[6:]}")
    return float(text)


if __name__ == "__main__":
    from sparkreport.errors import SparkreportError

    try:
        main()
    except SparkreportError as error:  # (not a project here, say: the same one line the CLI prints)
        sys.exit(f"Error: {error}")
