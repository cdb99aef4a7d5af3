/* sparkreport: draw every chart placeholder with vega-embed (served from this site).
 *
 * A placeholder is <div class="sparkreport-chart" data-spec="charts/NAME.vl.json"> holding a
 * <noscript> SVG fallback, or (in blog posts, whose URLs the blog plugin decides) a
 * <span class="sparkreport-chart"> holding the static SVG as an <img> whose src MkDocs made
 * relative to the page: the spec is the same path ending in .vl.json. Charts are drawn on page
 * load and again after Material's instant navigation (document$), and redrawn when the colour
 * scheme switches between light and dark. On a page with more than LAZY_ABOVE charts each is drawn
 * as it nears the viewport (data-state "waiting" until then).
 */
(function () {
  "use strict";

  var SELECTOR = ".sparkreport-chart";

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

  function specUrl(el) {
    var spec = el.getAttribute("data-spec");
    var img = el.querySelector("img:not(.sparkreport-fallback)");
    if (!spec && img) {
      spec = img.getAttribute("src").replace(/\.svg$/, ".vl.json");
    }
    return new URL(spec, window.location.href).href;
  }

  function draw(el) {
    var url = specUrl(el);
    var old = el.querySelector(".sparkreport-chart-view");
    if (old) {
      old.parentNode.removeChild(old);
    }
    var target = document.createElement("div");
    target.className = "sparkreport-chart-view";
    el.appendChild(target);
    el.setAttribute("data-state", "drawing");
    var options = {
      renderer: "svg",
      actions: { export: true, source: false, compiled: false, editor: false },
      theme: isDark() ? "dark" : undefined
    };
    return window.vegaEmbed(target, url, options).then(function () {
      el.setAttribute("data-state", "drawn");
    }).catch(function (error) {
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
})();
