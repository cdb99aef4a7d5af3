/* sparkreport: a chart spec refitted to a phone's column before vega-embed draws it (used by
 * sparkreport-charts.js, which loads after this file; window.sparkreportFit).
 *
 * The specs are sized for the desktop column: a 420 px plot, row labels of up to 440 px on its
 * left ("Llama-3-8B shape (random weights) · Output throughput"), legends on its right; drawn,
 * up to ~960 px wide. On a phone (a ~320 px column) neither way of showing that drawing reads:
 * scaled down, its 10 px labels are 3-4 px high; kept whole and scrolled sideways, the row
 * labels fill the screen and the plot starts off it. So below Material's own breakpoint (where
 * its sidebars fold away; the stylesheet's too) each spec is refitted to its column before it is
 * drawn: here, once, rather than a second size written into every chart's spec, and from
 * measured text, which a stylesheet cannot do inside an SVG.
 *
 * - Row labels that would take more than LABEL_SHARE of the width sit above their row, inside
 *   the plot, where the row holds only thin marks (points, interval rules: the forest and means
 *   charts); the rows grow apart to make room. Beside bars or boxes they stay on the left,
 *   wrapped (after a " · " first) at LABEL_SHARE of the width. No label is cut: rows that differ
 *   only at their end ("… · Output throughput", "… · Time to first token") stay told apart.
 * - Legends move under the plot, one under the other; a facet's row names move above their
 *   panels; titles wrap and start at the left; an axis drops a tick label that would run into
 *   its neighbour.
 * - The plot takes the width left, measured on the drawn chart and set through Vega's width
 *   signals (no second parse). A chart that still cannot fit (its plot would be narrower than
 *   MIN_PLOT_PX) keeps MIN_PLOT_PX, scrolls sideways, and is scrolled to show its plot first.
 * Wider screens get the spec as written.
 */
(function () {
  "use strict";

  var NARROW = "(max-width: 44.9375em)";
  // vega-embed keeps a column this wide on the chart's right for its "…" menu (.has-actions).
  var ACTIONS_PX = 38;
  var LABEL_SHARE = 0.4;
  var MIN_PLOT_PX = 140;
  // Vega's defaults: axis and legend labels 10 px, axis titles bold 11 px, the title bold 13 px.
  var LABEL_FONT = "10px sans-serif";
  var AXIS_TITLE_FONT = "bold 11px sans-serif";
  var TITLE_FONT = "bold 13px sans-serif";
  var LINE_PX = 12;
  // A y axis's tick, label padding and line beside its labels; vega-embed's padding around a view.
  var AXIS_GAP_PX = 8;
  var PAD_PX = 10;
  // About what a quantitative y axis takes beside the plot: its labels and its title.
  var Y_AXIS_PX = 60;
  // Half the height of a row's thin marks (a point of size 70, an error bar's ticks) and the gap
  // kept between them and the label above.
  var MARK_HALF_PX = 7;
  var THIN_MARKS = { point: true, circle: true, square: true, rule: true, errorbar: true };
  var LEGEND_CHANNELS = ["color", "fill", "stroke", "shape", "size", "opacity", "strokeDash"];

  function isNarrow() {
    return typeof window.matchMedia === "function" && window.matchMedia(NARROW).matches;
  }

  /* The width a chart in ``el`` may take: its column's, less the menu's. A chart in a closed
   * <details> that the browser does not lay out takes the nearest width it can find (and is
   * fitted again when opened). */
  function columnWidth(el) {
    var box = el;
    while (box && box.clientWidth === 0) {
      box = box.parentElement;
    }
    return Math.max(MIN_PLOT_PX, (box ? box.clientWidth : window.innerWidth) - ACTIONS_PX);
  }

  var canvas = null;

  function textWidth(text, font) {
    canvas = canvas || document.createElement("canvas").getContext("2d");
    canvas.font = font;
    return canvas.measureText(text).width;
  }

  /* ``text`` as lines no wider than ``limit`` px: broken after a " · " where it can be, else
   * between words, else after a hyphen ("DeepSeek-R1-Distill-" / "Qwen-7B"); a piece wider than
   * the limit alone keeps its own line. */
  function wrap(text, limit, font) {
    text = String(text);
    if (textWidth(text, font) <= limit) {
      return [text];
    }
    var parts = text.split(" · ");
    var pieces = parts.map(function (part, i) { return i < parts.length - 1 ? part + " ·" : part; });
    var lines = [];
    fill(pieces, " ", limit, font).forEach(function (line) {
      if (textWidth(line, font) <= limit) {
        lines.push(line);
        return;
      }
      fill(wordsOf(line), " ", limit, font).forEach(function (part) {
        var fits = textWidth(part, font) <= limit;
        lines = lines.concat(fits ? [part] : fill(part.match(/[^-]*-|[^-]+$/g) || [part], "", limit, font));
      });
    });
    return lines;
  }

  /* A line's words, a "·" kept with the word before it. */
  function wordsOf(line) {
    var words = [];
    line.split(" ").forEach(function (word) {
      if (word === "·" && words.length) {
        words[words.length - 1] += " ·";
      } else {
        words.push(word);
      }
    });
    return words;
  }

  /* ``pieces`` joined by ``glue`` into as few lines no wider than ``limit`` as go in order. */
  function fill(pieces, glue, limit, font) {
    var lines = [];
    var line = "";
    pieces.forEach(function (piece) {
      var joined = line ? line + glue + piece : piece;
      if (line && textWidth(joined, font) > limit) {
        lines.push(line);
        line = piece;
      } else {
        line = joined;
      }
    });
    lines.push(line);
    return lines;
  }

  function wrapped(text, limit, font) {
    var lines = wrap(text, limit, font);
    return lines.length > 1 ? lines : lines[0];
  }

  // Axis labels are data: wrapped when Vega draws them, by the same function the row heights
  // were computed with.
  if (window.vega && typeof window.vega.expressionFunction === "function") {
    window.vega.expressionFunction("sparkreportWrap", function (text, limit, lines) {
      if (!lines) {
        return wrapped(text, limit, LABEL_FONT);
      }
      // A label above its row: padded on top to ``lines`` lines, so that every label's last line
      // ends just above its row's mark, whatever its own number of lines.
      var own = wrap(text, limit, LABEL_FONT);
      while (own.length < lines) {
        own.unshift("");
      }
      return own;
    });
  }

  /* A title wrapped at ``limit`` and set flush left over the whole drawing: centred over the
   * plot, a title wider than it would reach past the chart's right edge. */
  function title(value, limit, font) {
    var spec = typeof value === "string" ? { text: value } : value;
    if (spec && typeof spec.text === "string") {
      spec.text = wrapped(spec.text, limit, font);
      spec.anchor = "start";
      spec.frame = spec.frame || "bounds";
    }
    return spec;
  }

  function layersOf(unit) {
    return [unit].concat(unit.layer || []);
  }

  function rowsOf(unit, inherited) {
    var rows = ((unit.data || {}).values || inherited || []).slice();
    (unit.layer || []).forEach(function (layer) {
      rows = rows.concat((layer.data || {}).values || []);
    });
    return rows;
  }

  function refitLegends(unit, width) {
    layersOf(unit).forEach(function (layer) {
      var encoding = layer.encoding || {};
      LEGEND_CHANNELS.forEach(function (name) {
        var channel = encoding[name];
        if (!channel || !channel.field || channel.legend === null) {
          return;
        }
        var legend = channel.legend = channel.legend || {};
        if (!legend.orient || legend.orient === "right" || legend.orient === "left") {
          legend.orient = "bottom";
        }
        if (!legend.columns) {
          legend.direction = "vertical";  // a row of entries under the plot can be wider than it
        }
        var columns = legend.columns || 1;
        legend.labelLimit = Math.min(legend.labelLimit || 160, Math.floor(width / columns) - 40);
      });
    });
  }

  /* A facet's row names above their panels (on the left, they took the width of the plot),
   * starting where the plot starts: wrapped to ``width``, the plot's (bold: a fifth narrower than
   * the labels' font measures), not cut at the chart's edge. ``row``: a facet field's channel. */
  function refitHeader(row, width) {
    if (row && row.field && row.header !== null) {
      row.header = row.header || {};
      row.header.labelOrient = "top";
      row.header.labelAnchor = "start";
      row.header.labelLimit = width;
      row.header.labelExpr = "sparkreportWrap(datum.label, " + Math.floor(width * 0.8) + ")";
    }
  }

  /* The rows' labels (a nominal or ordinal y): left alone when short, else above their rows or
   * wrapped on the left; the rows' step grows to hold the lines. Returns the width the labels
   * take beside the plot. */
  function refitRows(unit, rows, width) {
    var channels = [];
    var thin = true;
    layersOf(unit).forEach(function (layer) {
      var encoding = layer.encoding || {};
      var y = encoding.y;
      if (y && y.field && (y.type === "nominal" || y.type === "ordinal") && y.axis !== null) {
        channels.push(y);
        var kind = typeof layer.mark === "string" ? layer.mark : (layer.mark || {}).type;
        thin = thin && !!THIN_MARKS[kind] && !encoding.yOffset;
      }
    });
    if (!channels.length) {
      return 0;
    }
    var field = channels[0].field;
    var labels = {};
    rows.forEach(function (row) {
      if (row[field] !== undefined && row[field] !== null) {
        labels[String(row[field])] = true;
      }
    });
    var names = Object.keys(labels);
    var share = Math.floor(width * LABEL_SHARE);
    var widest = widestLine(names.map(function (name) { return [name]; }));
    if (widest <= share) {
      return widest + AXIS_GAP_PX;
    }
    var above = thin;
    var limit = above ? width - 10 : share;
    var labelLines = names.map(function (name) { return wrap(name, limit, LABEL_FONT); });
    var lines = Math.max.apply(null, labelLines.map(function (each) { return each.length; }));
    channels.forEach(function (y) {
      var axis = y.axis = y.axis || {};
      axis.labelExpr = "sparkreportWrap(datum.label, " + limit + (above ? ", " + lines : "") + ")";
      axis.labelLimit = limit + 2;
      axis.labelLineHeight = LINE_PX;
      if (above) {
        // The label's block (all labels padded to ``lines`` lines) ends MARK_HALF_PX + 2 above
        // its row's centre: a second line set from the top of a bottom-aligned first one ran
        // into the row's point and whiskers.
        axis.ticks = false;
        axis.labelAlign = "left";
        axis.labelBaseline = "top";
        axis.labelPadding = -4;
        axis.labelOffset = -(MARK_HALF_PX + 2 + lines * LINE_PX);
      }
    });
    var step = above ? lines * LINE_PX + 2 * MARK_HALF_PX + 6 : lines * LINE_PX + 6;
    var height = unit.height;
    if (height && typeof height.step === "number") {
      height.step = Math.max(height.step, step);
    } else if (height === undefined && step > 20) {
      unit.height = { step: step };
    }
    return above ? 1 : Math.min(limit, widestLine(labelLines)) + AXIS_GAP_PX;
  }

  function widestLine(labels) {
    var widest = 0;
    labels.forEach(function (lines) {
      lines.forEach(function (line) { widest = Math.max(widest, textWidth(line, LABEL_FONT)); });
    });
    return Math.ceil(widest);
  }

  /* One view (a single mark or layers) of ``width`` px: its legends, rows and titles refitted,
   * its plot given the width the labels leave. */
  function refitView(unit, width, inherited) {
    var rows = rowsOf(unit, inherited);
    refitLegends(unit, width);
    var beside = refitRows(unit, rows, width);
    layersOf(unit).forEach(function (layer) {
      var y = (layer.encoding || {}).y;
      if (y && y.type === "quantitative") {
        beside = Math.max(beside, Y_AXIS_PX);
      }
    });
    var plot = Math.max(MIN_PLOT_PX, width - beside - PAD_PX);
    if (typeof unit.width === "number") {
      unit.width = plot;
    }
    refitHeader((unit.encoding || {}).row || (unit.encoding || {}).facet, plot);
    layersOf(unit).forEach(function (layer) {
      var x = (layer.encoding || {}).x;
      if (!x) {
        return;
      }
      if (typeof x.title === "string") {
        x.title = wrapped(x.title, plot - 10, AXIS_TITLE_FONT);  // centred under the plot, not past it
      }
      if (x.type === "quantitative" && x.axis !== null) {
        // fewer ticks fit a narrow plot: drop a label that would run into its neighbour
        x.axis = x.axis || {};
        x.axis.labelOverlap = x.axis.labelOverlap || true;
        x.axis.labelSeparation = x.axis.labelSeparation || 6;
      }
    });
    if (unit.title) {
      unit.title = title(unit.title, width - PAD_PX, TITLE_FONT);
    }
  }

  function refit(spec, width, inherited) {
    var rows = (spec.data || {}).values || inherited;
    ["vconcat", "hconcat", "concat"].forEach(function (key) {
      (spec[key] || []).forEach(function (child) {
        refit(child, key === "vconcat" ? width : width / spec[key].length, rows);
      });
    });
    if (spec.spec) {
      refitHeader(spec.facet && (spec.facet.row || spec.facet), width - PAD_PX);
      refitView(spec.spec, width, rows);
    } else if (!spec.vconcat && !spec.hconcat && !spec.concat) {
      refitView(spec, width, rows);
    }
    if (spec.title && (spec.vconcat || spec.hconcat || spec.concat || spec.spec)) {
      spec.title = title(spec.title, width - PAD_PX, TITLE_FONT);
    }
    return spec;
  }

  /* ``spec`` (as written) refitted to a column ``width`` px wide (the chart's own, the menu's
   * column excluded). */
  function narrowSpec(spec, width) {
    var copy = JSON.parse(JSON.stringify(spec));
    // Legends under the plot one under the other (side by side, two were wider than a phone).
    var config = copy.config = copy.config || {};
    config.legend = config.legend || {};
    config.legend.layout = { bottom: { anchor: "start", direction: "vertical" } };
    return refit(copy, width, null);
  }

  /* After drawing: the plot widened or narrowed by what the drawing misses or exceeds ``width``
   * by (Vega's width signals: the view's, a facet's or each panel's), at most ``tries`` times. */
  function settle(result, el, width, tries) {
    var view = result.view;
    var svg = el.querySelector(".sparkreport-chart-view svg");
    var over = svg ? parseFloat(svg.getAttribute("width")) - width : 0;
    var signals = (result.vgSpec.signals || []).filter(function (s) {
      return /^(child|concat_\d+)_width$/.test(s.name) && typeof s.value === "number";
    });
    var moved = false;
    if (Math.abs(over) >= 1 && tries > 0) {
      if (typeof result.vgSpec.width === "number") {
        var plot = Math.max(MIN_PLOT_PX, view.width() - over);
        moved = plot !== view.width();
        view.width(plot);
      }
      signals.forEach(function (s) {
        var value = Math.max(MIN_PLOT_PX, view.signal(s.name) - over);
        moved = moved || value !== view.signal(s.name);
        view.signal(s.name, value);
      });
    }
    if (moved) {
      // resize(): a facet's or panels' layout is sized anew only when asked
      return view.resize().runAsync().then(function () { return settle(result, el, width, tries - 1); });
    }
    return null;
  }

  /* ``el``, a chart too wide for it that scrolls sideways, scrolled to where the chart's data
   * starts, past its row labels. */
  function showPlot(el) {
    el.scrollLeft = Math.max(0, plotLeft(el) - el.getBoundingClientRect().left - 8);
  }

  /* Where the drawn data starts on screen: the left edge of the marks, axes, legends and titles
   * left out. */
  function plotLeft(el) {
    var left = Infinity;
    Array.prototype.forEach.call(el.querySelectorAll(".sparkreport-chart-view svg g.role-mark"), function (g) {
      if (!g.closest(".role-axis, .role-legend, .role-title")) {
        var box = g.getBoundingClientRect();
        if (box.width || box.height) {
          left = Math.min(left, box.left);
        }
      }
    });
    return left === Infinity ? el.getBoundingClientRect().left : left;
  }

  window.sparkreportFit = {
    isNarrow: isNarrow, columnWidth: columnWidth, narrowSpec: narrowSpec, settle: settle, showPlot: showPlot
  };
})();
