/*
 * evalsite charts and the "copy link" button. Plain ES2017, no build step, no inline handlers.
 *
 * Charts: <div data-chart="score-trend">fallback table</div> names the id of a
 * <script type="application/json" id="score-trend"> written by Django's json_script. With
 * plotly.js loaded, the figure replaces the fallback; without JavaScript the table stays.
 * Runs on DOMContentLoaded and after every htmx swap. Clicking a point opens the page in its
 * customdata[0] (runs/charts.py puts the iteration's URL there), same-origin only.
 *
 * The chart's <details class="chart-data"> (its numbers as a table, open for pages read
 * without JavaScript) folds once the chart is drawn.
 *
 * Fitting (runs/charts/layout.py cannot know the width a chart is drawn at): once drawn,
 * and again when the window's width changes, a chart keeps only as many of the server's
 * x tick labels as its plot is wide enough to print side by side (every m-th, the newest
 * always kept), and grows taller when its legend wrapped onto so many rows that the plot
 * area fell under MIN_PLOT_PX.
 *
 * Copy link: any [data-copy-link] button copies the page's address (or the attribute's
 * value, when it has one: the share link in a shared view) and says "Copied" for 2 seconds.
 *
 * Filters: a <form data-sync-url> shows what the address says. htmx's Back restores a
 * snapshot of the page whose checkboxes and fields hold whatever they held when it was
 * taken, so on every history restore (and page load, and address pushed by a link in the
 * swapped part) each control is set from the URL.
 */
(function () {
  "use strict";

  var PLOT_CONFIG = { displaylogo: false, displayModeBar: false, responsive: true };
  var COPIED_FOR_MS = 2000;
  var MIN_PLOT_PX = 200;
  var TICK_CHAR_PX = 7.5; // "#100" at the charts' 12 px font
  var TICK_GAP_PX = 14;
  var REFIT_AFTER_MS = 200;

  function readFigure(id) {
    var script = document.getElementById(id);
    if (!script || script.tagName !== "SCRIPT" || script.type !== "application/json") {
      return null;
    }
    try {
      return JSON.parse(script.textContent);
    } catch (error) {
      console.warn("evalsite: chart data #" + id + " is not valid JSON", error);
      return null;
    }
  }

  // Only follow links back into this site: customdata is data, not a place to trust.
  function sameOriginUrl(value) {
    if (typeof value !== "string" || value === "") {
      return null;
    }
    try {
      var url = new URL(value, window.location.href);
      var web = url.protocol === "https:" || url.protocol === "http:";
      return web && url.origin === window.location.origin ? url.href : null;
    } catch (error) {
      return null;
    }
  }

  function followClickedPoint(event) {
    var point = event && event.points && event.points[0];
    var url = sameOriginUrl(point && point.customdata && point.customdata[0]);
    if (url) {
      window.location.assign(url);
    }
  }

  function renderChart(element) {
    if (element.hasAttribute("data-chart-rendered")) {
      return;
    }
    var figure = readFigure(element.getAttribute("data-chart"));
    if (!figure) {
      return; // keep the fallback table
    }
    element.setAttribute("data-chart-rendered", "");
    element.textContent = "";
    var xaxis = figure.layout && figure.layout.xaxis;
    if (xaxis && xaxis.tickmode === "array" && xaxis.tickvals) {
      element._evalsiteTicks = { vals: xaxis.tickvals, text: xaxis.ticktext || [] };
    }
    window.Plotly.newPlot(element, figure.data || [], figure.layout || {}, PLOT_CONFIG).then(
      function (plot) {
        plot.on("plotly_click", followClickedPoint);
        // Marked once laid out to its final size (a test photographs it then, not mid-way).
        Promise.resolve(fitChart(plot)).then(function () {
          element.setAttribute("data-chart-fitted", "");
        });
        var figureElement = element.closest("figure");
        var numbers = figureElement && figureElement.querySelector("details.chart-data");
        if (numbers) {
          numbers.open = false;
        }
      },
      function (error) {
        console.warn("evalsite: could not draw chart", error);
      }
    );
  }

  // Every step-th of the server's ticks, counted back from the newest (as the server thins).
  function thinnedTicks(ticks, plotWidth) {
    var widest = ticks.text.reduce(function (most, text) {
      return Math.max(most, String(text).length);
    }, 1);
    var room = Math.max(1, Math.floor(plotWidth / (widest * TICK_CHAR_PX + TICK_GAP_PX)));
    var step = Math.max(1, Math.ceil(ticks.vals.length / room));
    var vals = [];
    var text = [];
    for (var i = ticks.vals.length - 1; i >= 0; i -= step) {
      vals.unshift(ticks.vals[i]);
      text.unshift(ticks.text[i]);
    }
    return { vals: vals, text: text };
  }

  // Thin the tick labels to the plot's width and give the plot area its minimum height.
  function fitChart(plot) {
    var full = plot._fullLayout;
    var size = full && full._size;
    if (!size || !full.xaxis || full.xaxis.visible === false) {
      return;
    }
    var update = {};
    if (plot._evalsiteTicks) {
      var ticks = thinnedTicks(plot._evalsiteTicks, size.w);
      var shown = full.xaxis.tickvals || [];
      if (ticks.vals.length !== shown.length) {
        update["xaxis.tickvals"] = ticks.vals;
        update["xaxis.ticktext"] = ticks.text;
      }
    }
    var short = MIN_PLOT_PX - size.h;
    if (short >= 1) {
      update.height = full.height + Math.ceil(short);
    }
    if (Object.keys(update).length) {
      return window.Plotly.relayout(plot, update);
    }
    return null;
  }

  var refitTimer = null;
  var lastWidth = window.innerWidth;
  function refitCharts() {
    // Plotly's own responsive resize runs first; only a change of width moves ticks.
    if (window.innerWidth === lastWidth) {
      return;
    }
    lastWidth = window.innerWidth;
    window.clearTimeout(refitTimer);
    refitTimer = window.setTimeout(function () {
      document.querySelectorAll("[data-chart-rendered]").forEach(function (element) {
        if (element._fullLayout) {
          fitChart(element);
        }
      });
    }, REFIT_AFTER_MS);
  }

  function renderCharts() {
    if (!window.Plotly) {
      return; // plotly.js did not load: the fallback tables are the charts
    }
    document.querySelectorAll("[data-chart]").forEach(renderChart);
  }

  // Plotly keeps a window resize listener per responsive plot; free it when htmx removes one.
  function purgeChart(event) {
    var element = event.detail && event.detail.elt;
    var rendered = element && element.hasAttribute && element.hasAttribute("data-chart-rendered");
    if (window.Plotly && rendered) {
      window.Plotly.purge(element);
    }
  }

  function copyWithTextarea(text) {
    var area = document.createElement("textarea");
    area.value = text;
    area.setAttribute("readonly", "");
    area.style.position = "fixed";
    area.style.opacity = "0";
    document.body.appendChild(area);
    area.select();
    var copied = false;
    try {
      copied = document.execCommand("copy");
    } finally {
      area.remove();
    }
    return copied ? Promise.resolve() : Promise.reject(new Error("copy refused"));
  }

  function copyText(text) {
    // navigator.clipboard needs a secure context (https or localhost); plain-http
    // deployments on a private network still get the older route.
    if (navigator.clipboard && window.isSecureContext) {
      return navigator.clipboard.writeText(text).catch(function () {
        return copyWithTextarea(text);
      });
    }
    return copyWithTextarea(text);
  }

  function flash(button, message) {
    if (!button.hasAttribute("data-copy-label")) {
      button.setAttribute("data-copy-label", button.textContent);
    }
    button.textContent = message;
    window.clearTimeout(button._evalsiteCopyTimer);
    button._evalsiteCopyTimer = window.setTimeout(function () {
      button.textContent = button.getAttribute("data-copy-label");
      button.removeAttribute("data-copy-label");
    }, COPIED_FOR_MS);
  }

  function onClick(event) {
    var button = event.target.closest && event.target.closest("[data-copy-link]");
    if (!button) {
      return;
    }
    event.preventDefault();
    var text = button.getAttribute("data-copy-link") || window.location.href;
    copyText(text).then(
      function () {
        flash(button, "Copied");
      },
      function () {
        flash(button, "Copy failed");
      }
    );
  }

  // A copy button does nothing without JavaScript, so templates may render it `hidden`.
  function revealCopyButtons() {
    document.querySelectorAll("[data-copy-link][hidden]").forEach(function (button) {
      button.hidden = false;
    });
  }

  // Set every named control of the filter forms from the address (see the header comment).
  function syncFilters() {
    var params = new URLSearchParams(window.location.search);
    document.querySelectorAll("form[data-sync-url]").forEach(function (form) {
      Array.prototype.forEach.call(form.elements, function (control) {
        if (!control.name) {
          return;
        }
        if (control.type === "checkbox" || control.type === "radio") {
          control.checked = params.getAll(control.name).indexOf(control.value) !== -1;
        } else if (control.tagName === "SELECT" || control.tagName === "INPUT") {
          var value = params.get(control.name) || "";
          if (control.tagName === "SELECT" && !control.querySelector('option[value="' + CSS.escape(value) + '"]')) {
            value = "";
          }
          control.value = value;
        }
      });
    });
  }

  function enhance() {
    renderCharts();
    revealCopyButtons();
  }

  // One delegated listener serves buttons that htmx swaps in later, too.
  document.addEventListener("click", onClick);

  function start() {
    syncFilters();
    enhance();
    document.body.addEventListener("htmx:historyRestore", syncFilters);
    // A link inside the swapped part ("Show every eval", a tag) changes the address too;
    // not while someone types in a filter field, whose text may be ahead of the address.
    document.body.addEventListener("htmx:pushedIntoHistory", function () {
      var active = document.activeElement;
      var typing = active && active.form && active.form.hasAttribute("data-sync-url") &&
        (active.type === "search" || active.type === "text");
      if (!typing) {
        syncFilters();
      }
    });
    window.addEventListener("pageshow", syncFilters);
    window.addEventListener("resize", refitCharts);
    // The whole document, not just the swap target: an outerHTML swap settles elements
    // that are not inside it, and rendered charts are skipped anyway.
    document.body.addEventListener("htmx:afterSettle", enhance);
    document.body.addEventListener("htmx:beforeCleanupElement", purgeChart);
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
