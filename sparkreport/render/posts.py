"""Blog posts with live data: ``{{ value(…) }}``, ``{{ compare(…) }}``, ``{{ chart(…) }}``, ``{{ table(…) }}``.

Posts are hand-written Markdown under ``docs/blog/posts/`` (Material's blog plugin lists and
dates them). ``render`` copies them into the output docs folder like every hand-written page,
then this module fills in their bindings from the same analysis every page reads (``arm_stats``,
``compare``, ``check``) — before any site generator runs, so the output is plain Markdown.

A binding is parsed with :mod:`ast` and evaluated only if it is a call of one of the four
functions with literal arguments; nothing in a post is ever ``eval``-ed. Fenced code blocks,
inline code spans and the YAML front matter stay literal. A binding that names an unknown
function, metric, filter, chart or table, matches no arm (or more than one), or yields a
missing number fails the render with one line: the post's ``file:line``, the binding, what
went wrong and what the data has instead.
"""

from __future__ import annotations

import ast
import os
import posixpath
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from sparkreport import metrics as metric_catalog
from sparkreport.errors import BuildError
from sparkreport.names import shown_values
from sparkreport.render.markdown import MISSING, is_missing, md_escape, num
from sparkreport.render.precision import difference_places, table_places
from sparkreport.render.tables import metric_label

if TYPE_CHECKING:
    import pandas as pd

    from sparkreport.render.context import SiteData
    from sparkreport.render.pages import PageDoc

#: Where posts live inside the docs folder (Material's default ``post_dir``).
POSTS_DIR = "blog/posts"
#: The functions a binding may call.
FUNCTIONS = ("value", "compare", "chart", "table")
#: What ``value(stat=…)`` accepts, in the order shown in error messages.
STATS = ("mean", "median", "sd", "min", "max", "n", "ci_low", "ci_high")
#: Filters that match a column of the statistics (labels: ``label_KEY=`` or ``**{"label.KEY": …}``).
ARM_FILTERS = ("campaign", "model", "model_name", "environment")
#: The most decimals ``value(digits=…)`` shows.
MAX_DIGITS = 10


def _is_digits(value: Any) -> bool:
    return type(value) is int and 0 <= value <= MAX_DIGITS


def _is_text(value: Any) -> bool:
    return value is None or isinstance(value, str)


def _is_one_value(value: Any) -> bool:
    return value is None or isinstance(value, (str, int, float))


#: The named arguments whose type is checked before a binding is evaluated: (accepts, what the
#: value is not, the fix). The metric and the chart or table name have checks of their own; any
#: other keyword is a filter, which takes one value.
_ARGUMENTS: dict[str, tuple[Callable[[Any], bool], str, str]] = {
    "digits": (_is_digits, "a number of decimals", f"digits takes a whole number from 0 to {MAX_DIGITS}, "
               "e.g. digits=1"),
    "unit": (lambda value: isinstance(value, bool), "True or False",
             "unit takes True (the default: the unit after the number) or False (the number alone)"),
    "stat": (_is_text, "a statistic", f"stat takes one of {', '.join(STATS)} in quotes, e.g. stat=\"median\""),
    "factor": (_is_text, "a column name", "write it in quotes, e.g. factor=\"environment\""),
    "baseline": (_is_one_value, "one value", "write it in quotes, e.g. baseline=\"native\""),
    "candidate": (_is_one_value, "one value", "write it in quotes, e.g. candidate=\"container\""),
}

_BINDING = re.compile(r"\{\{((?:(?!\n[ \t]*\n).)*?)\}\}", re.DOTALL)
_OPEN = re.compile(r"\{\{")
_FENCE_OPEN = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})")
_BACKTICKS = re.compile(r"`+")
_LIST_ITEM = re.compile(r"^[ \t]{0,3}(?:[-*+]|\d{1,9}[.)])(?:[ \t]|$)")


class BindingError(Exception):
    """A binding cannot be evaluated; the message says why and what is available."""


def check_arguments(function: str, arguments: dict[str, Any]) -> None:
    """Refuse an argument of the wrong type before it is used (``digits=-1``, ``factor=[…]``).

    ``arguments`` are a handler's bound arguments (the ``filters`` mapping spread among them), so
    an argument is checked whether it was given by name or by position.
    """
    named = {key: value for key, value in arguments.items() if key not in ("self", "filters")}
    named.update(arguments.get("filters", {}))
    for key, value in named.items():
        if key in ("metric", "name"):
            continue  # _metric_name and the chart and table lookups say what they take
        accepts, noun, fix = _ARGUMENTS.get(key, (_is_one_value, "one value", ""))
        if not accepts(value):
            if not fix:  # a filter (a table's options are filters of its own)
                fix = f"a filter takes a string or a number, e.g. {key}=\"…\""
            raise BindingError(f"{function}(): {key}={value!r} is not {noun} — {fix}")


@dataclass
class PostDoc:
    """One rendered post: its path in the docs folder, its source file, title and bindings."""

    path: str
    source: Path
    title: str
    bindings: int = 0
    charts: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Binding:
    """One ``{{ … }}`` in a post: the function, its literal arguments, and where it stands."""

    function: str
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    text: str
    line: int


# --------------------------------------------------------------------------- parsing


def protected_spans(text: str) -> list[tuple[int, int]]:
    """Character ranges that stay literal: front matter, fenced and indented code blocks, inline
    code spans. A line indented 4 or more after a blank line is code, except inside a list
    (there it continues the list item, as in Python-Markdown)."""
    spans: list[tuple[int, int]] = []
    lines = text.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    index = 0
    if lines and lines[0].rstrip() == "---":
        for end in range(1, len(lines)):
            if lines[end].rstrip() in ("---", "..."):
                spans.append((0, offsets[end + 1]))
                index = end + 1
                break
    prose_start = offsets[index]
    in_list = False
    previous_blank = True
    while index < len(lines):
        line = lines[index]
        if not line.strip():
            previous_blank = True
            index += 1
            continue
        if previous_blank and not in_list and _indent(line) >= 4:
            # An indented code block: it runs to the next non-blank line indented less than 4.
            end = index + 1
            while end < len(lines) and (not lines[end].strip() or _indent(lines[end]) >= 4):
                end += 1
            spans += _code_spans(text, prose_start, offsets[index])
            spans.append((offsets[index], offsets[end]))
            prose_start = offsets[end]
            index = end
            continue
        if _LIST_ITEM.match(line):
            in_list = True
        elif _indent(line) < 2 and previous_blank:
            in_list = False  # a paragraph after a blank line, at the margin, ends the list
        previous_blank = False
        opened = _FENCE_OPEN.match(line)
        if not opened:
            index += 1
            continue
        spans += _code_spans(text, prose_start, offsets[index])
        fence = opened.group(1)
        close = re.compile(rf"^[ \t]{{0,3}}{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$")
        end = index + 1
        while end < len(lines) and not close.match(lines[end].rstrip("\r\n")):
            end += 1
        stop = offsets[min(end + 1, len(lines))]
        spans.append((offsets[index], stop))
        index = end + 1
        prose_start = stop
    spans += _code_spans(text, prose_start, len(text))
    return sorted(spans)


def _indent(line: str) -> int:
    """Columns of leading whitespace (a tab counts to the next multiple of 4)."""
    width = 0
    for char in line:
        if char == " ":
            width += 1
        elif char == "\t":
            width += 4 - width % 4
        else:
            break
    return width


def _code_spans(text: str, start: int, stop: int) -> list[tuple[int, int]]:
    """Inline code spans in ``text[start:stop]``: a backtick run closed by one of equal length."""
    out = []
    runs = list(_BACKTICKS.finditer(text, start, stop))
    i = 0
    while i < len(runs):
        opener = runs[i]
        closer = next((j for j in range(i + 1, len(runs)) if len(runs[j].group()) == len(opener.group())), None)
        if closer is None:
            i += 1  # an unmatched run is literal backticks, not code
            continue
        out.append((opener.start(), runs[closer].end()))
        i = closer + 1
    return out


def find_bindings(text: str) -> list[tuple[int, int, str]]:
    """``(start, end, inner text)`` of every binding outside code and front matter."""
    return _scan(text)[0]


def _scan(text: str) -> tuple[list[tuple[int, int, str]], list[int]]:
    """The bindings outside code and front matter, and where each ``{{`` that no ``}}`` closes
    (in the same paragraph) starts."""
    spans = protected_spans(text)

    def literal(position: int) -> bool:
        return any(lo <= position < hi for lo, hi in spans)

    found = []
    position = 0
    while (match := _BINDING.search(text, position)) is not None:
        if literal(match.start()):  # `{{ x }` in code: look again just after its braces
            position = match.start() + 2
            continue
        found.append((match.start(), match.end(), match.group(1)))
        position = match.end()
    inside = [(start, end) for start, end, _ in found]
    unclosed = [match.start() for match in _OPEN.finditer(text)
                if not literal(match.start()) and not any(lo <= match.start() < hi for lo, hi in inside)]
    return found, unclosed


def parse_binding(inner: str, line: int) -> Binding:
    """Parse the inside of ``{{ … }}`` into a :class:`Binding` — with :mod:`ast`, never ``eval``."""
    text = "{{ " + " ".join(inner.split()) + " }}"
    try:
        tree = ast.parse(inner.strip(), mode="eval")
    except SyntaxError:
        raise BindingError(f"not a binding — write one of {_calls()}") from None
    call = tree.body
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name):
        raise BindingError(f"not a binding — write one of {_calls()}")
    if call.func.id not in FUNCTIONS:
        raise BindingError(f"unknown function {call.func.id!r} — bindings are {_calls()}")
    try:
        args = tuple(_literal(node) for node in call.args)
        kwargs: dict[str, Any] = {}
        for keyword in call.keywords:
            if keyword.arg is None:  # **{"label.gpu": "h100"}
                extra = _literal(keyword.value)
                if not isinstance(extra, dict) or not all(isinstance(k, str) for k in extra):
                    raise BindingError("** takes a literal mapping of filter names to values")
                kwargs.update(extra)
            else:
                kwargs[keyword.arg] = _literal(keyword.value)
    except ValueError:
        raise BindingError("arguments must be literals (strings, numbers, True/False/None)") from None
    return Binding(call.func.id, args, kwargs, text, line)


def _literal(node: ast.expr) -> Any:
    if isinstance(node, ast.Starred):
        raise ValueError("starred argument")
    return ast.literal_eval(node)


def _calls() -> str:
    return ", ".join(f"{name}(…)" for name in FUNCTIONS)


def fill(text: str, resolve: Callable[[Binding], str], where: str) -> tuple[str, int]:
    """Replace every binding in ``text`` by ``resolve(binding)``; returns (text, bindings).

    Errors become one-line :class:`BuildError` s: ``where:line: {{ binding }}: problem``.
    """
    out: list[str] = []
    last = 0
    count = 0
    found, unclosed = _scan(text)
    if unclosed:  # a half-typed binding would be published as written
        start = unclosed[0]
        line_end = text.find("\n", start)
        shown = text[start:line_end if line_end >= 0 else None].strip()
        raise BuildError(f"{where}:{text.count(chr(10), 0, start) + 1}: {shown}: a binding not closed — "
                         "close it with }} (to show it as written, put it in backticks)")
    for start, end, inner in found:
        line = text.count("\n", 0, start) + 1
        shown = "{{ " + " ".join(inner.split()) + " }}"
        try:
            binding = parse_binding(inner, line)
            line_start = text.rfind("\n", 0, start) + 1
            line_end = text.find("\n", end)
            alone = not text[line_start:start].strip() and not text[end:line_end if line_end >= 0 else None].strip()
            if binding.function == "table" and not alone:
                raise BindingError("table() must stand on a line of its own")
            replacement = resolve(binding)
            if binding.function == "table":  # a block of its own, even right under a line of prose
                replacement = _blank_line_around(text, line_start, line_end, replacement)
        except BindingError as exc:
            raise BuildError(f"{where}:{line}: {shown}: {exc}") from None
        out += [text[last:start], replacement]
        last = end
        count += 1
    out.append(text[last:])
    return "".join(out), count


def _blank_line_around(text: str, line_start: int, line_end: int, table: str) -> str:
    """``table`` (a binding's Markdown table, standing on the line from ``line_start`` to
    ``line_end`` of ``text``) with a blank line before it when the line above is text, and after
    it when the line below is: Markdown would read the table's rows as part of that paragraph."""
    before = text[:line_start].splitlines()
    above = before[-1] if before else ""
    below = text[line_end + 1:].split("\n", 1)[0] if line_end >= 0 else ""
    return ("\n" if above.strip() else "") + table + ("\n" if below.strip() else "")


# --------------------------------------------------------------------------- evaluation


class Resolver:
    """Evaluates bindings against one render's site data (the numbers every page shows)."""

    def __init__(self, site: SiteData, pages: Iterable[PageDoc], post_path: str = ""):
        self.site = site
        self.post_path = post_path
        self.charts: dict[str, tuple[PageDoc, Any]] = {}
        for doc in pages:
            for chart in doc.charts:
                self.charts[f"{doc.folder}/{chart.name}" if doc.folder else chart.name] = (doc, chart)
        self._stats_by: dict[tuple[str, ...], pd.DataFrame] = {}
        self._compared: dict[tuple[str, str], pd.DataFrame] = {}
        self._chart_count = 0
        self.used_charts: list[str] = []
        #: Warnings a compare() sentence of this post already gave in full (said once per post).
        self._warned: set[str] = set()

    def __call__(self, binding: Binding) -> str:
        import inspect

        handler: Callable[..., str] = getattr(self, f"_{binding.function}")
        try:
            bound = inspect.signature(handler).bind(*binding.args, **binding.kwargs)
        except TypeError as exc:
            raise BindingError(f"{binding.function}(): {exc}") from None
        check_arguments(binding.function, bound.arguments)
        return handler(*binding.args, **binding.kwargs)

    # value() -------------------------------------------------------------------

    def _value(self, metric: Any, stat: str = "mean", digits: int | None = None, unit: bool = True,
               **filters: Any) -> str:
        """One statistic of one arm, formatted with the metric's unit."""
        metric = self._metric_name(metric)
        if stat not in STATS:
            raise BindingError(f"unknown stat {stat!r} — one of {', '.join(STATS)}")
        columns, labels = self._filters(filters)
        frame = self._stats(tuple(labels))
        self._known_metric(metric, frame)
        row = _one_arm(_select(frame[frame["metric"] == metric], {**columns, **labels}, f"with {metric}"))
        value = row[stat]
        if is_missing(value):
            have = ", ".join(f"{s} {_plain_text(row[s], metric, s)}" for s in STATS if not is_missing(row[s]))
            kind = "published figures" if row["source"] == "published" else "these runs"
            raise BindingError(f"{stat} is missing (NaN) for {_arm_name(row)} — {kind} give: {have}")
        if stat == "n":
            return str(int(value))
        # the arm's figures with the decimals its Results table gives them (the precision rule)
        text = num(value, digits=table_places([row], metric) if digits is None else digits)
        suffix = metric_catalog.unit_of(metric)
        return f"{text} {suffix}" if unit and suffix else text

    def _stats(self, labels: tuple[str, ...]) -> pd.DataFrame:
        if not labels:
            return self.site.stats
        if labels not in self._stats_by:
            from sparkreport.analysis import arm_stats

            self._stats_by[labels] = arm_stats(self.site.dataset, self.site.config.analysis, by=list(labels),
                                               baseline=self.site.config.baseline_of("environment"))
        return self._stats_by[labels]

    def _filters(self, filters: dict[str, Any], allowed: tuple[str, ...] = ARM_FILTERS
                 ) -> tuple[dict[str, str], dict[str, str]]:
        """Split keyword filters into column filters and label filters (``label.KEY``)."""
        columns: dict[str, str] = {}
        labels: dict[str, str] = {}
        for key, wanted in filters.items():
            if key.startswith(("label.", "label_")):
                name = "label." + key[len("label."):]
                if name not in self.site.dataset.label_columns:
                    known = shown_values(self.site.dataset.label_columns)
                    raise BindingError(f"no label {key[len('label.'):]!r} in the data — labels: {known}")
                labels[name] = str(wanted)
            elif key in allowed:
                columns[key] = str(wanted)
            else:
                raise BindingError(f"unknown filter {key!r} — filters: {', '.join(allowed)}, label_KEY")
        return columns, labels

    def _metric_name(self, metric: Any) -> str:
        if not isinstance(metric, str):
            raise BindingError("the first argument is the metric name, a string (e.g. \"kv_cache_gib\")")
        return metric

    def _known_metric(self, metric: str, frame: pd.DataFrame) -> None:
        present = sorted({str(value) for value in frame["metric"].unique()})
        if metric not in present:
            what = "no arm reports" if metric_catalog.is_metric(metric) else "unknown metric"
            raise BindingError(f"{what} {metric!r} — metrics in the data: {shown_values(present)}")

    # compare() -----------------------------------------------------------------

    def _compare(self, metric: Any, factor: str | None = None, baseline: str | None = None,
                 candidate: str | None = None, **filters: Any) -> str:
        """The claim sentence of one comparison, with its CI and any error-level warning."""
        from sparkreport.analysis import claim_sentence, errors_for

        metric = self._metric_name(metric)
        factor = factor or self.site.config.factor
        baseline = baseline or self.site.config.baseline
        columns, labels = self._filters(filters, ("campaign", "model", "model_name"))
        if labels:
            raise BindingError("compare() filters on campaign, model and model_name; "
                               "to contrast label values use factor=\"label.KEY\"")
        frame = self._comparisons(factor, str(baseline))
        present = sorted({str(value) for value in frame["metric"].unique()}) if not frame.empty else []
        if metric not in present:
            what = "unknown metric" if not metric_catalog.is_metric(metric) else "no comparison of"
            raise BindingError(f"{what} {metric!r} — compared metrics: {', '.join(present) or 'none'}")
        wanted = {**columns, **({"candidate": str(candidate)} if candidate is not None else {})}
        rows = _select(frame[frame["metric"] == metric], wanted, f"comparing {metric}")
        if len(rows) > 1:
            listed = "; ".join(f"{r.campaign}/{r.model} {r.candidate} vs {r.baseline}"
                               for r in rows.itertuples())
            raise BindingError(f"matches {len(rows)} comparisons ({listed}) — add campaign=, model= or "
                               "candidate= to pick one")
        row = {str(k): v for k, v in rows.iloc[0].to_dict().items()}
        flagged = errors_for(row, self.site.findings, self._runs_behind(row, factor))
        codes = ", ".join(dict.fromkeys(f.code for f in flagged))
        if flagged and codes in self._warned:  # the full warning is on this post already
            from sparkreport.analysis.checks import check_titles

            # about the runs, whatever this claim's metric: a memory claim under a throughput check
            # read as if the check were about memory
            return md_escape(f"{claim_sentence(row)} ⚠ (errors in these runs, as above: "
                             f"{'; '.join(check_titles(flagged))})")
        self._warned.add(codes)
        return md_escape(claim_sentence(row, flagged))

    def _comparisons(self, factor: str, baseline: str) -> pd.DataFrame:
        config = self.site.config
        if (factor, baseline) == (config.factor, config.baseline):
            if self.site.comparisons.empty and "compare_note" in self.site.extra:
                raise BindingError(str(self.site.extra["compare_note"]))
            return self.site.comparisons
        if (factor, baseline) not in self._compared:
            from sparkreport.analysis import compare
            from sparkreport.errors import DataError

            try:
                self._compared[(factor, baseline)] = compare(self.site.dataset, factor, baseline, config.analysis)
            except DataError as exc:
                raise BindingError(exc.format_message()) from None
        return self._compared[(factor, baseline)]

    def _runs_behind(self, row: dict[str, Any], factor: str) -> list[str]:
        """Run ids (per-run and published-summary records) of both arms of a comparison."""
        levels = {str(row["baseline"]), str(row["candidate"])}
        ids: list[str] = []
        for frame in (self.site.dataset.runs, self.site.dataset.summaries):
            if frame.empty or factor not in frame.columns:
                continue
            keep = (frame["model"].astype(str) == str(row["model"])) & frame[factor].astype(str).isin(levels)
            if factor != "campaign":
                keep &= frame["campaign"].astype(str) == str(row["campaign"])
            ids += [str(r) for r in frame.loc[keep, "run_id"]]
        return ids

    # chart() and table() -------------------------------------------------------------

    def _chart(self, name: Any) -> str:
        """A chart a page already draws: its static SVG (linked so MkDocs fixes the path) in a
        placeholder that the chart loader draws interactively from the matching ``.vl.json``."""
        import html

        if not isinstance(name, str) or name not in self.charts:
            raise BindingError(f"no chart {name!r} — charts: {shown_values(sorted(self.charts))}")
        doc, chart = self.charts[name]
        self._chart_count += 1
        self.used_charts.append(name)
        target = posixpath.join(doc.folder, "charts", f"{chart.name}.svg")
        href = posixpath.relpath(target, posixpath.dirname(self.post_path) or ".")
        ident = re.sub(r"[^A-Za-z0-9_-]", "-", f"chart-post-{self._chart_count}-{chart.name}")
        return (f'<span class="sparkreport-chart" id="{ident}" role="figure" '
                f'aria-label="{html.escape(chart.title, quote=True)}">'
                f"![{md_escape(chart.description)}]({href})</span>")

    def _table(self, name: Any, **filters: Any) -> str:
        """A Markdown table the pages also show: ``arms``, ``comparisons`` or ``findings``."""
        tables: dict[str, Callable[..., str]] = {"arms": self._arms_table, "comparisons": self._comparisons_table,
                  "findings": self._findings_table}
        if not isinstance(name, str) or name not in tables:
            raise BindingError(f"no table {name!r} — tables: {', '.join(tables)}")
        return tables[str(name)](**filters)

    def _arms_table(self, metric: Any = None, **filters: Any) -> str:
        from sparkreport.render.report import campaign_title

        if metric is None:
            raise BindingError("table(\"arms\") needs metric=\"…\"")
        metric = self._metric_name(metric)
        columns, labels = self._filters(filters)
        frame = self._stats(tuple(labels))
        self._known_metric(metric, frame)
        rows = _select(frame[frame["metric"] == metric], {**columns, **labels}, f"with {metric}")
        unit = metric_catalog.unit_of(metric)
        label = metric_label(metric)
        head = ["Campaign", "Model", "Environment", "n", f"{label}, mean ({unit})" if unit else f"{label}, mean",
                "SD", f"{self.site.confidence_label} CI", "Median", "Min–max"]
        body = []
        records = rows.to_dict(orient="records")
        d = table_places(records, metric)  # one metric's table: one number of decimals
        for row in records:
            spread = MISSING if is_missing(row["min"]) or is_missing(row["max"]) else \
                f"{num(row['min'], digits=d)}–{num(row['max'], digits=d)}"
            published = " (*published*)" if row["source"] == "published" else ""  # as Results marks them
            body.append([md_escape(campaign_title(self.site, row["campaign"])), md_escape(row["model_name"]),
                         md_escape(row["environment"]) + published, str(int(row["n"])),
                         num(row["mean"], digits=d), num(row["sd"], digits=d),
                         _interval(row["ci_low"], row["ci_high"], d), num(row["median"], digits=d), spread])
        # published figures without a spread have no SD, CI, median or range: no column of dashes;
        # a campaign or a model the same in every row is the post's subject, said in its prose
        same = {i for i in (0, 1) if len(body) > 1 and len({row[i] for row in body}) == 1}
        shown = [i for i in range(len(head))
                 if i not in same and (i < 5 or any(row[i] != MISSING for row in body))]
        return _markdown_table([head[i] for i in shown], [[row[i] for i in shown] for row in body])

    def _comparisons_table(self, metric: str | None = None, factor: str | None = None,
                           baseline: str | None = None, **filters: Any) -> str:
        from sparkreport.render.markdown import pvalue

        columns, labels = self._filters(filters, ("campaign", "model", "model_name", "candidate"))
        if labels:
            raise BindingError("table(\"comparisons\") filters on campaign, model, model_name and candidate")
        frame = self._comparisons(factor or self.site.config.factor, str(baseline or self.site.config.baseline))
        if metric is not None:
            present = sorted({str(value) for value in frame["metric"].unique()}) if not frame.empty else []
            if self._metric_name(metric) not in present:
                raise BindingError(f"no comparison of {metric!r} — compared metrics: {', '.join(present) or 'none'}")
            columns["metric"] = metric
        rows = _select(frame, columns, "compared")
        head = ["model", "metric", "candidate vs baseline", "means", "difference (CI)", "Holm p", "verdict"]
        body = []
        for row in rows.to_dict(orient="records"):
            m = str(row["metric"])
            unit = f" {row['unit']}" if row.get("unit") else ""
            d = difference_places(row)
            body.append([md_escape(row["model_name"]), md_escape(metric_label(m)),
                         f"{md_escape(row['candidate'])} vs {md_escape(row['baseline'])}",
                         f"{num(row['mean_candidate'], digits=d)} vs {num(row['mean_baseline'], digits=d)}{unit}",
                         f"{num(row['diff'], digits=d)} ({_interval(row['diff_ci_low'], row['diff_ci_high'], d)})",
                         pvalue(row["p_holm"]), md_escape(row["verdict"])])
        return _markdown_table(head, body)

    def _findings_table(self, severity: str | None = None, code: str | None = None,
                        campaign: str | None = None) -> str:
        found = [f for f in self.site.findings  # in check()'s order: severity, code, message
                 if (severity is None or f.severity == severity) and (code is None or f.code == code)
                 and (campaign is None or f.message.startswith(f"{campaign}/") or f.message.startswith(f"{campaign}:"))]
        if not found:
            codes = sorted({f"{f.severity} {f.code}" for f in self.site.findings})
            raise BindingError(f"no finding matches — findings: {', '.join(codes) or 'none'}")
        from sparkreport.render.builtin import checks_of, in_arm_order, said_once, without_assumption
        from sparkreport.render.report import campaign_titles, message_body, message_campaign, model_names

        basis = {id(f): "; ".join(f.assumes) for f in found}
        assumed = list(dict.fromkeys(b for b in basis.values() if b))
        # Grouped as Data quality groups them (checks_of): the check in words, named once over its
        # rows; one row per sentence, the arms it is about together, by their models' names (and
        # their campaign's title where the rows span several campaigns); an assumption marked †.
        marks = {(f.code, message_body(without_assumption(f.message))):
                 f" ({'†' * (assumed.index(basis[id(f)]) + 1)})" if basis[id(f)] else "" for f in found}
        one_campaign = len({message_campaign(f.message) for f in found}) == 1
        severities = len({f.severity for f in found}) > 1
        listed = [{"code": f.code, "severity": f.severity, "message": without_assumption(f.message), "runs": []}
                  for f in in_arm_order(self.site, found)]  # as Data quality lists them
        rows = []
        common = []  # a clause every row of a check ends with: said once, under the table
        for check in checks_of(listed, [], model_names(self.site), campaign_titles(self.site),
                               campaign=not one_campaign):
            title = check["title"][:1].upper() + check["title"][1:]
            whole = [row["finding"] for row in check["rows"]]
            said_once(check)
            if check["common"]:
                common.append(f"{md_escape(title)}: in every row, {md_escape(check['common'])}")
            for i, (row, finding) in enumerate(zip(check["rows"], whole, strict=True)):
                said = md_escape(row["finding"].removesuffix(".")) + marks[(check["code"], finding)] + "."
                rows.append([*([check["severity"]] if severities else []), "" if i else md_escape(title),
                             md_escape(row["where"]) or "—", said])
        head = [*(["Severity"] if severities else []), "Check", "Where", "Finding"]
        table = _markdown_table(head, rows)
        notes = "".join(f"\n\n{line}" for line in common)
        notes += "".join(f"\n\n{'†' * (i + 1)} assumes {md_escape(a)}" for i, a in enumerate(assumed))
        return table + notes


def _select(frame: pd.DataFrame, filters: dict[str, str], what: str) -> pd.DataFrame:
    """Rows matching every filter; names the first filter that matched nothing and what exists."""
    for column, wanted in filters.items():
        values = frame[column].astype("string").fillna("") if column in frame.columns else None
        if values is None or not (values == wanted).any():
            have = sorted(set(values)) if values is not None else []
            listed = shown_values(v for v in have if v)
            raise BindingError(f"no arm {what} has {column}={wanted!r} — {column} values here: {listed}")
        frame = frame[values == wanted]
    if frame.empty:
        raise BindingError(f"no arm {what}")
    return frame


def _one_arm(rows: pd.DataFrame) -> dict[str, Any]:
    if len(rows) > 1:
        listed = "; ".join(_arm_name({str(k): v for k, v in r.items()}) for r in rows.to_dict(orient="records"))
        raise BindingError(f"matches {len(rows)} arms ({listed}) — add campaign=, model= or environment= "
                           "to pick one")
    return {str(k): v for k, v in rows.iloc[0].to_dict().items()}


def _arm_name(row: dict[str, Any]) -> str:
    labels = [f"{k}={v}" for k, v in row.items() if str(k).startswith("label.") and not is_missing(v)]
    return "/".join([str(row["campaign"]), str(row["model"]), str(row["environment"]), *labels])


def _plain_text(value: Any, metric: str, stat: str) -> str:
    return str(int(value)) if stat == "n" else num(value, metric)


def _interval(low: Any, high: Any, digits: int) -> str:
    if is_missing(low) or is_missing(high):
        return MISSING
    return f"{num(low, digits=digits)} to {num(high, digits=digits)}"


def _markdown_table(head: list[str], body: list[list[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(cells) + " |" for cells in body]
    return "\n".join(lines)


# --------------------------------------------------------------------------- posts


def post_files(docs_dir: Path) -> list[Path]:
    """The posts in a rendered docs folder (Markdown under ``blog/posts/``), sorted."""
    folder = docs_dir / POSTS_DIR
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.rglob("*.md")
                  if not any(part.startswith(".") for part in p.relative_to(folder).parts))


def post_title(text: str, fallback: str) -> str:
    """A post's title: ``title:`` in its front matter, else its first ``# `` heading."""
    spans = protected_spans(text)
    front = text[:spans[0][1]] if spans and spans[0][0] == 0 and text.startswith("---") else ""
    match = re.search(r"^title:\s*(.+?)\s*$", front, re.MULTILINE)
    if match:
        return match.group(1).strip("\"'")
    heading = re.search(r"^# (.+?)\s*$", text[len(front):], re.MULTILINE)
    return heading.group(1) if heading else fallback


def shown_path(path: Path) -> str:
    """A path for error messages: relative to the current directory when inside it."""
    relative = os.path.relpath(path)
    return path.as_posix() if relative.startswith("..") else Path(relative).as_posix()


def is_draft(text: str) -> bool:
    """Whether a post's front matter says ``draft: true`` (Material's blog plugin's own key)."""
    spans = protected_spans(text)
    front = text[:spans[0][1]] if spans and spans[0][0] == 0 and text.startswith("---") else ""
    return re.search(r"^draft:\s*(true|yes)\s*$", front, re.MULTILINE | re.IGNORECASE) is not None


def render_posts(site: SiteData | None, docs_dir: Path, source_docs: Path, pages: Iterable[PageDoc],
                 footer: Callable[[], str] | None = None, notices: list[str] | None = None, *,
                 kept: KeptPosts | None = None, record: KeptPosts | None = None) -> list[PostDoc]:
    """Fill in the bindings of every post copied into ``docs_dir``; returns the posts written.

    ``source_docs`` is the project's hand-written ``docs/`` (for error messages); ``footer``
    returns the provenance footer appended to each post. A draft (``draft: true``, such as the
    example post ``sparkreport init`` writes) is not published: it is left out of the build and
    ``notices`` gets one line saying so, so a draft whose bindings no longer match the data
    never stops a build.

    ``record``: each post's bindings, their results and its footer are put in it. ``kept``
    (with ``site`` None): the posts are filled from what an earlier render recorded for the same
    data (:class:`KeptPosts`); :class:`NotKept` when a post's bindings are not those recorded.
    """
    pages = list(pages)
    written = []
    for path in post_files(docs_dir):
        relative = path.relative_to(docs_dir).as_posix()
        text = path.read_text(encoding="utf-8")
        if is_draft(text):
            path.unlink()
            if notices is not None:
                notices.append(f"{shown_path(source_docs / relative)}: a draft (draft: true), not published — "
                               "edit it, then remove that line to publish it")
            continue
        where = shown_path(source_docs / relative)
        if site is None:
            post = kept.posts.get(relative) if kept is not None else None
            if post is None:
                raise NotKept(relative)
            filled, count = fill(text, post.replay(), where)
            if count != len(post.bindings):
                raise NotKept(relative)
            charts, shown_footer = post.charts, post.footer
        else:
            resolver = Resolver(site, pages, relative)
            results: list[tuple[str, str]] = []

            def resolve(binding: Binding, resolver: Resolver = resolver,
                        results: list[tuple[str, str]] = results) -> str:
                result = resolver(binding)
                results.append((binding.text, result))
                return result

            filled, count = fill(text, resolve, where)
            charts, shown_footer = resolver.used_charts, footer() if footer is not None else None
            if record is not None:
                record.posts[relative] = KeptPost([text for text, _ in results], [result for _, result in results],
                                                  charts, shown_footer)
        if shown_footer is not None:
            filled = filled.rstrip("\n") + "\n\n" + shown_footer
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text(filled, encoding="utf-8")
        os.replace(tmp, path)
        written.append(PostDoc(relative, source_docs / relative, post_title(text, path.stem), count, charts))
    return written


class NotKept(Exception):
    """A post whose bindings an earlier render did not record (new, changed, or a new post)."""


@dataclass
class KeptPost:
    """What a post's bindings gave: each binding as written (:attr:`Binding.text`) and its
    result, in order (a compare() sentence says a warning once per post, so a result depends on
    the bindings before it), the charts it showed, and its footer."""

    bindings: list[str]
    results: list[str]
    charts: list[str]
    footer: str | None

    def replay(self) -> Callable[[Binding], str]:
        """A resolver giving the recorded results while the bindings are the recorded ones, in
        their order; :class:`NotKept` at the first that is not."""
        done = [0]

        def resolve(binding: Binding) -> str:
            index = done[0]
            if index >= len(self.bindings) or self.bindings[index] != binding.text:
                raise NotKept(binding.text)
            done[0] += 1
            return self.results[index]

        return resolve


@dataclass
class KeptPosts:
    """The posts' bindings and results of the last build, kept in the build cache
    (``build/cache/posts.pickle``) under its data key (:func:`~sparkreport.site.incremental.build_key`:
    everything a build reads but the hand-written docs). A build after a post edit that leaves
    the bindings as they were fills them from here without loading the dataset."""

    posts: dict[str, KeptPost] = field(default_factory=dict)

    FILE: ClassVar[str] = "posts.pickle"

    @classmethod
    def load(cls, cache_dir: Path, data_key: str) -> KeptPosts | None:
        """The kept posts of a build with this data key; None when there are none."""
        from sparkreport.cache import read_cache_pickle

        posts = read_cache_pickle(cache_dir / cls.FILE, data_key, "kept").get("posts")
        if not isinstance(posts, dict) or not all(isinstance(post, KeptPost) for post in posts.values()):
            return None  # none kept (or for other data): a store without posts keeps an empty mapping
        return cls(posts)

    def save(self, cache_dir: Path, data_key: str) -> None:
        from sparkreport.cache import write_cache_pickle

        write_cache_pickle(cache_dir / self.FILE, data_key, "kept", {"posts": self.posts})


__all__ = ["POSTS_DIR", "BindingError", "KeptPost", "KeptPosts", "NotKept", "PostDoc", "Resolver", "check_arguments",
           "fill", "find_bindings", "parse_binding", "post_files", "render_posts"]
