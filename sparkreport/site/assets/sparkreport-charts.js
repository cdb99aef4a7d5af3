/* sparkreport: draw every chart placeholder with vega-embed (served from this site).
 *
 * A placeholder is <div class="sparkreport-chart" data-spec="charts/NAME.vl.json"> holding a
 * <noscript> SVG fallback, or (in blog posts, whose URLs the blog plugin decides) a
 * <span class="sparkreport-chart"> holding the static SVG as an <img> whose src MkDocs made
 * relative to the page: the spec is the same path ending in .vl.json. Charts are drawn on page
 * load and again after Material's instant navigation (document$), and redrawn when the colour
 * scheme switches between light and dark. On a page with more than LAZY_ABOVE charts each is drawn
 * as it nears the viewport (data-state "waiting" until then). On a phone each spec is refitted to
 * its column first (sparkreport-fit.js; data-fitted: the width it was fitted to), and drawn again
 * when that width changes.
 */
(function () {
  "use strict";

  var SELECTOR = ".sparkreport-chart";
  var fit = window.sparkreportFit;

  /* The width ``el``'s chart is refitted to on a narrow screen (sparkreport-fit.js); 0: drawn as
   * its spec is written. */
  function fitted(el) {
    return fit && fit.isNarrow() ? fit.columnWidth(el) : 0;
  }

  function isDark() {
    var scheme = document.body && document.body.getAttribute("data-md-color-scheme");
    return scheme === "slate";
  }

  function showFallback(el) {
    var noscript = el.querySelector("noscript");
    if (!noscript || el.querySelector("img.sparkreport-fallback")) {
      return;
    }
    var holder = document.createElement("div");
    holder.innerHTML = noscript.textContent || "";
    var img = holder.querySelector("img");
    if (img) {
      img.className = "sparkreport-fallback";
      el.appendChild(img);
    }
  }

  /* The spec's address, resolved against the page's address once, when the page is shown
   * (drawAll): with instant navigation the address bar already names the next page while this
   * one's lazily drawn charts may still be drawn, and a relative spec would then be looked for
   * under the wrong page. */
  function specUrl(el) {
    if (!el.sparkreportSpec) {
      var spec = el.getAttribute("data-spec");
      var img = el.querySelector("img:not(.sparkreport-fallback)");
      if (!spec && img) {
        spec = img.getAttribute("src").replace(/\.svg$/, ".vl.json");
      }
      el.sparkreportSpec = new URL(spec, window.location.href).href;
    }
    return el.sparkreportSpec;
  }

  function draw(el) {
    var url = specUrl(el);
    // A chart drawn again before its last drawing ended (the colour scheme switched, the column
    // resized): only the latest drawing says how it ended.
    var drawing = (el.sparkreportDrawing || 0) + 1;
    el.sparkreportDrawing = drawing;
    function superseded() {
      return el.sparkreportDrawing !== drawing;
    }
    var old = el.querySelector(".sparkreport-chart-view");
    if (old) {
      old.parentNode.removeChild(old);
    }
    var target = document.createElement("div");
    target.className = "sparkreport-chart-view";
    el.appendChild(target);
    el.setAttribute("data-state", "drawing");
    el.removeAttribute("data-wide");
    var options = {
      renderer: "svg",
      actions: { export: true, source: false, compiled: false, editor: false },
      theme: isDark() ? "dark" : undefined
    };
    var width = fitted(el);
    var spec = !width ? Promise.resolve(url) : window.fetch(url).then(function (response) {
      if (!response.ok) {
        throw new Error("HTTP " + response.status);
      }
      return response.json();
    }).then(function (written) {
      try {
        return fit.narrowSpec(written, width);
      } catch (error) {  // a spec of a shape the refit does not know: drawn as written
        console.warn("sparkreport: could not fit " + url + " to the screen (" + error + ")");
        return written;
      }
    });
    return spec.then(function (source) {
      return window.vegaEmbed(target, source, options);
    }).then(function (result) {
      return width ? fit.settle(result, el, width, 3) : null;
    }).then(function () {
      if (superseded()) {
        return;
      }
      el.setAttribute("data-state", "drawn");
      el.setAttribute("data-fitted", width ? String(width) : "");
      // Wider than its column (on a narrow screen, where the CSS does not scale a chart down): it
      // scrolls sideways. Only then: a scrolling box would clip the open "…" menu.
      if (el.scrollWidth > el.clientWidth + 1) {
        el.setAttribute("data-wide", "");
        if (width) {
          fit.showPlot(el);
        }
      }
    }).catch(function (error) {
      if (superseded()) {
        return;
      }
      el.setAttribute("data-state", "fallback");
      if (target.parentNode) {
        target.parentNode.removeChild(target);
      }
      showFallback(el);
      console.warn("sparkreport: could not draw " + url + " (" + error + "); showing the static SVG");
    });
  }

  // A page with more charts than this (a campaign's Runs page: a monitoring chart per sampled run,
  // up to 250) draws each as it comes within a screen of the viewport, not all on load (each is
  // a fetch and ~50 ms of drawing); printing draws the rest.
  var LAZY_ABOVE = 24;
  var nearby = null;

  function drawAll() {
    var nodes = document.querySelectorAll(SELECTOR);
    if (nearby) {
      nearby.disconnect();
      nearby = null;
    }
    if (!nodes.length) {
      return;
    }
    if (typeof window.vegaEmbed !== "function") {
      Array.prototype.forEach.call(nodes, showFallback);
      return;
    }
    Array.prototype.forEach.call(nodes, specUrl);  // while the address is this page's
    if (nodes.length <= LAZY_ABOVE || typeof window.IntersectionObserver !== "function") {
      Array.prototype.forEach.call(nodes, draw);
      return;
    }
    nearby = new IntersectionObserver(function (entries, observer) {
      entries.forEach(function (entry) {
        if (entry.isIntersecting) {
          observer.unobserve(entry.target);
          draw(entry.target);
        }
      });
    }, { rootMargin: "100% 0px" });
    Array.prototype.forEach.call(nodes, function (el) {
      if (el.getAttribute("data-state") !== "drawn") {
        el.setAttribute("data-state", "waiting");
      }
      nearby.observe(el);
    });
  }

  function drawWaiting() {
    if (!nearby) {
      return;
    }
    nearby.disconnect();
    nearby = null;
    Array.prototype.forEach.call(document.querySelectorAll(SELECTOR + '[data-state="waiting"]'), draw);
  }

  /* A drawn chart is drawn again when the column it was fitted to changes width (a phone turned
   * sideways, a window narrowed past the breakpoint or widened back, a <details> opened); a
   * change of height alone (a phone's address bar sliding away) draws nothing. */
  var resizing = null;

  function refitOnResize() {
    window.clearTimeout(resizing);
    resizing = window.setTimeout(function () {
      Array.prototype.forEach.call(document.querySelectorAll(SELECTOR + '[data-state="drawn"]'), function (el) {
        if ((el.getAttribute("data-fitted") || "") !== String(fitted(el) || "")) {
          draw(el);
        }
      });
    }, 200);
  }

  function watchScheme() {
    if (!window.MutationObserver || !document.body) {
      return;
    }
    var observer = new MutationObserver(function (changes) {
      for (var i = 0; i < changes.length; i++) {
        if (changes[i].attributeName === "data-md-color-scheme") {
          drawAll();
          return;
        }
      }
    });
    observer.observe(document.body, { attributes: true });
  }

  if (window.document$ && typeof window.document$.subscribe === "function") {
    window.document$.subscribe(drawAll);
  } else if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", drawAll);
  } else {
    drawAll();
  }
  watchScheme();
  window.addEventListener("beforeprint", drawWaiting);
  window.addEventListener("resize", refitOnResize);
  document.addEventListener("toggle", refitOnResize, true);  // a <details> opened
})();
