/* sparkreport: send a reader who follows an old link to a group of runs to where those runs are now.
 *
 * Until issue 16's ninth round a large store had one Runs page per campaign, model and environment
 * (runs/<campaign>/<model>--<environment>/, and page-<k>/ below it); now each campaign has its
 * pages (runs/<campaign>/, page-<k>/) with a section per model and environment, whose heading
 * carries the anchor <model>--<environment>. Those old addresses are not written into the site (a
 * thousand files at 10 000 runs, copied by every build): the host serves its 404 page for them
 * (GitHub Pages, Netlify and most static hosts do), and this script, on that page, asks the
 * campaign's first Runs page (its table of groups) where the group starts and goes there. Without
 * that page (or its link) it goes to the campaign's first page at that anchor. Any other missing
 * page is left alone.
 */
(function () {
  "use strict";

  var OLD = /^(.*\/)runs\/([^/]+)\/([^/]+--[^/]+)\/(?:page-\d+\/)?(?:index\.html)?$/;

  function isNotFound() {
    var heading = document.querySelector("h1");
    return !!heading && /^404\b/.test((heading.textContent || "").trim());
  }

  function target(match) {
    var root = match[1];
    var campaign = match[2];
    var anchor = match[3];
    var index = new URL(root + "runs/" + campaign + "/index.html", window.location.href);
    var fallback = new URL(root + "runs/" + campaign + "/#" + anchor, window.location.href).href;
    return fetch(index.href, { credentials: "same-origin" })
      .then(function (response) {
        return response.ok ? response.text() : "";
      })
      .then(function (text) {
        var links = new DOMParser().parseFromString(text, "text/html").querySelectorAll("a[href]");
        for (var i = 0; i < links.length; i++) {
          var url = new URL(links[i].getAttribute("href"), index.href);
          if (url.hash === "#" + anchor && url.pathname.indexOf("/runs/" + campaign + "/") !== -1) {
            return url.href;
          }
        }
        return fallback;
      })
      .catch(function () {
        return fallback;
      });
  }

  function redirect() {
    var match = OLD.exec(window.location.pathname);
    if (!match || !isNotFound()) {
      return;
    }
    target(match).then(function (href) {
      window.location.replace(href);
    });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", redirect);
  } else {
    redirect();
  }
})();
