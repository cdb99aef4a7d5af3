"""The Jinja2 environment that writes Markdown: loaders, escaping and number formatting.

Templates ship in ``sparkreport/templates/``; a project's ``templates/`` folder is searched
first, so a file there overrides the packaged one of the same name.

Every ``{{ value }}`` is escaped for Markdown unless it is :class:`markupsafe.Markup`
(what the link, code and chart helpers return): model names, labels and run ids are user
data and must show as text, never as HTML or Markdown syntax.
"""

from __future__ import annotations

import html
import math
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from markupsafe import Markup

from sparkreport import figures
from sparkreport import metrics as metric_catalog
from sparkreport.figures import MISSING, digits_for, is_missing, num
from sparkreport.metrics import with_unit
from sparkreport.names import SHOWN_VALUES, shown_values

if TYPE_CHECKING:
    import jinja2

    from sparkreport.charts import ChartSpec

PACKAGE_TEMPLATES = Path(__file__).resolve().parent.parent / "templates"

_MD_SPECIAL = re.compile(r"([\\`*_\[\]{}|])")
#: '<' that could open a tag or comment, '&' that could start an entity; '< 0.001' stays as is.
_HTML_START = re.compile(r"<(?=[A-Za-z/!?])|&(?=#?\w+;)")


#: A character md_escape changes, or whitespace other than single spaces: text without one is
#: returned as it is (most cells are numbers and names).
_NEEDS_ESCAPE = re.compile(r"[\\`*_\[\]{}|<&]|[^\S ]| {2}")


def md_escape(value: Any) -> str:
    """Text safe in Markdown prose or a table cell: no HTML tag, entity or Markdown syntax."""
    if value is None:
        return MISSING
    text = str(value)
    if _NEEDS_ESCAPE.search(text) is None:
        return text
    text = re.sub(r"\s+", " ", text)
    text = _HTML_START.sub(lambda m: "&lt;" if m.group() == "<" else "&amp;", text)
    return _MD_SPECIAL.sub(r"\\\1", text)


def _finalize(value: Any) -> Any:
    if isinstance(value, Markup):
        return value
    if isinstance(value, float) and not math.isfinite(value):
        return MISSING
    return md_escape(value)


def size(count: int) -> Markup:
    """A file's size for a reader: '512 bytes', '19.3 KiB', '24.9 MiB' (binary units, one decimal;
    a no-break space before the unit, which a narrow table column would otherwise put on a line
    of its own)."""
    if count < 1024:
        return Markup(f"{count:,}\u00a0byte{'' if count == 1 else 's'}")  # Markup: kept as written
    value = float(count)
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        value /= 1024
        if value < 1024 or unit == "TiB":
            break
    return Markup(f"{value:,.1f}\u00a0{unit}")


def interval_places(low: Any, high: Any, metric: str | None = None, digits: int | None = None) -> int:
    """The decimals an interval is written with: the metric's (or ``digits``), more (up to four
    more) where its ends differ but round to one number, until they differ."""
    places = digits if digits is not None else digits_for(metric)
    if is_missing(low) or is_missing(high) or float(low) == float(high):
        return places
    for more in range(5):
        if num(low, metric, places + more) != num(high, metric, places + more):
            return places + more
    return places  # narrower than that: as the metric writes it


def ci(low: Any, high: Any, metric: str | None = None, digits: int | None = None) -> str:
    """'a to b' for an interval; '—' when either end is missing. Ends that differ but round to
    one number get more decimals (:func:`interval_places`): '9.411 to 9.414', not '9.41 to
    9.41', which reads as no spread."""
    if is_missing(low) or is_missing(high):
        return MISSING
    places = interval_places(low, high, metric, digits)
    return f"{num(low, metric, places)} to {num(high, metric, places)}"


def mean_in(mean: Any, low: Any, high: Any, metric: str | None = None) -> str:
    """A mean written with as many decimals as its interval (:func:`interval_places`): beside
    '9.411 to 9.414', 9.413, not 9.41 (which reads as outside it)."""
    return num(mean, metric, interval_places(low, high, metric))


def interval(low: Any, high: Any, metric: str | None = None, digits: int | None = None) -> str:
    """An interval as :func:`ci` writes it, or 'no spread' where its ends are equal (every run
    recorded the same value: an interval of zero width, not one that rounds to a point); '—'
    when either end is missing."""
    if not is_missing(low) and not is_missing(high) and float(low) == float(high):
        return "no spread"
    return ci(low, high, metric, digits)


def pvalue(p: Any) -> str:
    """A p-value as every page writes it (:func:`sparkreport.figures.pvalue`: '0.034', '< 0.001',
    '—'), '< 0.001' as :class:`~markupsafe.Markup`: a template's escaping would fold its
    no-break space into a space ('<' is no tag here)."""
    text = figures.pvalue(p)
    return Markup(text) if text == figures.BELOW_FLOOR else text


def signed(value: Any, digits: int = 2) -> str:
    """A signed number ('+0.03', '-1.20'). A value that rounds to zero keeps its sign with as many
    more decimals (up to three) as show its first digit ('-0.004', not '-0.00'): an interval's
    end just below zero says so. Zero, and a value too small for that, is '0.00'; '—' when missing."""
    if is_missing(value):
        return MISSING
    number = float(value)
    for places in range(digits, digits + 4):
        if f"{abs(number):.{places}f}".strip("0.") != "":
            return f"{number:+.{places}f}"
    return f"{0:.{digits}f}"


def percent(value: Any, digits: int = 1) -> str:
    """A fraction as a percentage ('8.8%'; '0.036%' rather than '0.0%' for one that is not zero)."""
    if is_missing(value):
        return MISSING
    number = float(value) * 100
    if number and float(f"{number:.{digits}f}") == 0:
        return f"{number:.2g}%"
    return f"{number:.{digits}f}%"


def code(value: Any) -> Markup:
    """An inline code span that survives backticks in the text."""
    text = " ".join(str(value).split())
    fence = "`" * (max((len(m) for m in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return Markup(f"{fence}{pad}{text}{pad}{fence}")


def word_code(value: Any) -> Markup:
    """A short name (a check's code) as inline code that a narrow table column breaks only after a
    hyphen, never inside a word as Material lets code break ("rooflin|e", "capacity|-|weights")."""
    return Markup(f'<code class="sparkreport-word">{h(value)}</code>')


def skipped_note(skipped: Any) -> Markup:
    """' *Not possible from published figures: …*' after a sentence, or nothing."""
    if is_missing(skipped) or not skipped:
        return Markup("")
    return Markup(f" *Not possible from published figures: {md_escape(skipped)}.*")


def h(value: Any) -> Markup:
    """HTML-escaped text, for use inside raw-HTML blocks (where Markdown escapes would show)."""
    return Markup(html.escape(" ".join(str(value).split()), quote=True))


#: Longest stretch of an identifier without a break opportunity (a sha256 run id is 64 characters).
BREAK_EVERY = 10


def breakable(value: Any, nowrap: bool = False) -> Markup:
    """An identifier as HTML (escaped) with break opportunities (``<wbr>``) after each dot and every
    :data:`BREAK_EVERY` characters of a longer stretch without a dot or a hyphen: a browser takes
    those (and the hyphens) before breaking inside a word as Material lets code do ("cgrou|p-16g").
    ``nowrap``: for a cell that does not wrap otherwise (``white-space: nowrap``, where a hyphen is
    no break): after each dot and each hyphen only, so a hex stretch stays whole."""
    pieces = re.split(r"([.-])", " ".join(str(value).split()))
    out = []
    for piece in pieces:
        if piece == ".":
            out.append(".<wbr>")
        elif piece == "-":
            out.append("-<wbr>" if nowrap else "-")
        elif nowrap:
            out.append(html.escape(piece, quote=True))
        else:
            chunks = [piece[i:i + BREAK_EVERY] for i in range(0, len(piece), BREAK_EVERY)] or [""]
            out.append("<wbr>".join(html.escape(chunk, quote=True) for chunk in chunks))
    return Markup("".join(out))


def link(text: Any, target: str) -> Markup:
    """A Markdown link with escaped text (``target`` is produced by us, not user data)."""
    return Markup(f"[{md_escape(text)}]({target})")


def chart_html(chart: ChartSpec, folder: str = "charts", *, static: bool = True) -> Markup:
    """The chart placeholder: vega-embed draws into it; without JavaScript the static SVG shows
    (``static``), or else the chart's description and a link to its Vega-Lite spec.

    Written as one raw-HTML line so every Markdown engine passes it through unchanged. Paths
    are relative to the page, which always sits at ``<section>/index.md`` so the same relative
    URL works with and without MkDocs' directory URLs.
    """
    base = html.escape(f"{folder}/{chart.name}", quote=True)
    title = html.escape(chart.title, quote=True)
    alt = html.escape(chart.description, quote=True)
    fallback = (f'<img src="{base}.svg" alt="{alt}">' if static else
                f'{alt} (<a href="{base}.vl.json">Vega-Lite spec</a>; the chart needs JavaScript)')
    from sparkreport.charts import drawn_size, phone_height

    # The drawn chart's shape, kept until it is drawn (then the CSS lets it go): the text below
    # does not move as the charts above it are drawn, nor does a link to a heading land elsewhere.
    # On a phone, where the chart is refitted to the column, the refitted chart's height.
    reserve = ""
    if chart.spec:
        width, height = drawn_size(chart.spec)
        reserve = (f' style="aspect-ratio: {width} / {height}; max-width: {width}px; '
                   f'--sparkreport-phone-height: {phone_height(chart.spec)}px"')

    return Markup(
        f'<div class="sparkreport-chart" id="chart-{html.escape(chart.name, quote=True)}" '
        f'data-spec="{base}.vl.json" role="figure" aria-label="{title}"{reserve}><noscript>{fallback}</noscript></div>'
    )


#: The prefix that names a packaged template whatever the project overrides (``sparkreport/_footer.md``).
PACKAGED_PREFIX = "sparkreport"


def make_environment(project_templates: Path | None, compiled: Path | None = None) -> jinja2.Environment:
    """A Jinja2 environment: the project's templates first, then the packaged ones.

    ``compiled``: a folder that keeps the compiled templates between builds (Jinja's bytecode
    cache: each template by its name and file, recompiled when its source changes; Jinja's own
    version and Python's are in each file). The environment's options are this module's code,
    so the caller names the folder by the package's digest (:func:`template_cache`). Compiling
    the templates a new run's pages use was ~0.1 s of each page worker.
    """
    import jinja2

    campaign_title = jinja2.pass_context(_campaign_title)
    loaders: list[jinja2.BaseLoader] = []
    if project_templates is not None and project_templates.is_dir():
        loaders.append(jinja2.FileSystemLoader(str(project_templates)))
    loaders.append(jinja2.FileSystemLoader(str(PACKAGE_TEMPLATES)))
    # ``sparkreport/<name>`` is always the packaged template, so that an override can extend or
    # include the default it replaces (``{% include "sparkreport/_footer.md" %}``) instead of
    # copying it and missing the package's later fixes.
    loaders.append(jinja2.PrefixLoader({PACKAGED_PREFIX: jinja2.FileSystemLoader(str(PACKAGE_TEMPLATES))}))
    env = jinja2.Environment(
        loader=jinja2.ChoiceLoader(loaders),
        autoescape=False,
        finalize=_finalize,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        bytecode_cache=jinja2.FileSystemBytecodeCache(str(compiled)) if compiled is not None else None,
    )
    env.context_class = _markdown_context_class()
    from sparkreport.render.precision import deltas, share, table_places

    env.filters.update(num=num, ci=ci, interval=interval, pvalue=pvalue, percent=percent, code=code, md=md_escape, h=h,
                       breakable=breakable, size=size, campaign_title=campaign_title)
    env.globals.update(link=link, skipped_note=skipped_note, chart=chart_html, num=num, ci=ci, interval=interval,
                       mean_in=mean_in,
                       pvalue=pvalue, signed=signed, places=table_places, deltas=deltas, share=share,
                       percent=percent, code=code, word_code=word_code, is_missing=is_missing, MISSING=MISSING,
                       cut=shown_values, counted=counted,
                       runs_and_summaries=runs_and_summaries, design_columns=design_columns, with_unit=with_unit,
                       campaign_list=jinja2.pass_context(_campaign_list), few=few, margin=margin_text,
                       assumptions_sentence=assumptions_sentence,
                       metric_label=metric_catalog.label_of)
    return env


def _markdown_context_class() -> type:
    """Jinja's template context, with ``{{ super() }}`` giving the parent block as Markdown that
    is already written (:class:`~markupsafe.Markup`), not a value to escape: an override that
    extends a packaged page (``{% block body %}{{ super() }}…``) gets the page as the package
    writes it, with or without ``|safe``."""
    import jinja2.runtime

    class MarkdownBlock(jinja2.runtime.BlockReference):
        @classmethod
        def of(cls, parent: Any) -> Any:
            """Jinja's reference to a parent block as one of these (no parent: Jinja's Undefined)."""
            return parent if isinstance(parent, jinja2.Undefined) else cls(
                parent.name, parent._context, parent._stack, parent._depth)

        def __call__(self) -> Markup:
            return Markup(super().__call__())

        @property
        def super(self) -> Any:
            return MarkdownBlock.of(super().super)

    class MarkdownContext(jinja2.runtime.Context):
        def super(self, name: str, current: Any) -> Any:
            return MarkdownBlock.of(super().super(name, current))

    return MarkdownContext


def margin_text(fraction: float) -> str:
    """An equivalence margin (a fraction of the baseline mean) as the pages write it: "±2%", "±2.5%"."""
    return f"±{fraction * 100:g}%"


def _campaign_list(context: Any, names: Any) -> str:
    """``{{ campaign_list(names) }}``: the campaigns by their titles, as a sentence lists them
    (:func:`~sparkreport.render.report.titles_phrase`: each quoted, joined with commas and "and",
    cut short past as many as ``cut`` shows)."""
    from sparkreport.render.report import titles_phrase

    return titles_phrase([_campaign_title(context, name) for name in names], limit=SHOWN_VALUES)


def assumptions_sentence(assumed: list[str]) -> str:
    """The sentence under a list of findings naming what its checks assumed (Home, a campaign
    page), each assumption once; an aside every one of them ends with ("(from the catalog; the
    record states no precision)") is said once, not after each model."""
    items = [str(a).rstrip(".") for a in assumed]
    aside = re.search(r" \([^()]*\)$", items[0]) if len(items) > 1 else None
    if aside is not None and all(item.endswith(aside.group(0)) for item in items):
        items = [item[:-len(aside.group(0))] for item in items]
    else:
        aside = None
    return (f"Some of these checks rest on assumptions, not on recorded facts{aside.group(0) if aside else ''}: "
            f"{'; '.join(items)}.")


def few(names: Any) -> bool:
    """``{% if few(names) %}``: whether a sentence may name them all (at most as many as
    ``campaign_list`` names before it cuts the list short); past that, a count says more than
    eight names and "37 more"."""
    return len(names) <= SHOWN_VALUES


def _campaign_title(context: Any, name: Any) -> str:
    """``{{ name|campaign_title }}``: what the pages call the campaign ``name`` (its title from
    sparkreport.yml, its campaign file or its published summary; else the name), read from the
    page's ``site``."""
    from sparkreport.render.report import campaign_title as title_of

    site = context.get("site")
    return str(name) if site is None else title_of(site, str(name))


def design_columns(entries: list[dict[str, Any]]) -> list[str]:
    """The design labels any of a Runs table's ``entries`` carries (``condition``), sorted: a
    column each."""
    return sorted({name for entry in entries for name in entry.get("condition") or {}})


def counted(n: object, noun: str, plural: str | None = None) -> str:
    """"1 run", "2 runs", "10,000 runs": a count with its noun in the right number."""
    try:
        value = int(n)  # type: ignore[call-overload]
    except (TypeError, ValueError):
        return f"{n} {plural or noun + 's'}"
    return f"{value:,} {noun if value == 1 else plural or noun + 's'}"


def runs_and_summaries(runs: int, summaries: int) -> str:
    """What a page or the site was built from: "80 runs and 8 published arm summaries",
    "2 published arm summaries" (no runs: not "0 runs and …"), "1 run"."""
    parts = [counted(runs, "run")] if runs or not summaries else []
    if summaries:
        parts.append(counted(summaries, "published arm summary", "published arm summaries"))
    return " and ".join(parts)


#: The compiled page templates' folder in a build's cache (one subfolder per package digest).
TEMPLATE_CACHE = "templates"


def template_cache(cache_dir: Path, package: str) -> Path | None:
    """The folder for :func:`make_environment`'s compiled templates under ``cache_dir``, named by
    the package's digest ``package``; another digest's folder is removed. None when it cannot
    be made (a read-only cache: the templates are compiled every time, the same pages)."""
    import shutil

    root = cache_dir / TEMPLATE_CACHE
    folder = root / package[:16]
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for other in root.iterdir():
            if other != folder:
                shutil.rmtree(other, ignore_errors=True) if other.is_dir() else other.unlink(missing_ok=True)
    except OSError:
        return None
    return folder
