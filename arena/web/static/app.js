/* arena dashboard: the charts (portfolio value per family from /api/v1/curves, drawn with the
   vendored uPlot), the home page's countdown to the next decision run and its auto-refresh.
   No inline script or style anywhere (the CSP forbids them): every chart is a [data-chart]
   element whose data- attributes say what to fetch; tables never depend on this file.

   A chart shows each family's total value over its agents (the tables' Value), its break-even
   (their starting balances, stepping up when a cohort joins; 0 in %), a floating tooltip with
   every series' value at the cursor's time (sorted by value, $ to the cent and % to 2
   decimals, as in the tables), decision-run lines and a legend of buttons: hover or focus one
   to highlight its series, click it to show that series alone, click again to show all. */
(function () {
  "use strict";

  /* No grey: grey is the break-even's and the decision lines' colour. */
  var COLORS = ["#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#ca8a04",
    "#db2777", "#65a30d", "#7c3aed", "#0d9488", "#be123c"];
  var MUTED = "#6b7280";
  var HEIGHT = 320;

  function money(v) {
    if (v == null) { return "-"; }
    return (v < 0 ? "-$" : "$") + Math.abs(v).toLocaleString("en-US",
      { minimumFractionDigits: 2, maximumFractionDigits: 2 });
  }

  function whole(v) {
    return (v < 0 ? "-$" : "$") + Math.abs(Math.round(v)).toLocaleString("en-US");
  }

  /* A return as the tables write it: signed, 2 decimals, rounded half to even from the API's
     4 places (as Python's Decimal formatting does). */
  function pct(v) {
    if (v == null) { return "-"; }
    var n = Math.round(Math.abs(v) * 10000);
    var q = Math.floor(n / 100);
    var r = n % 100;
    if (r > 50 || (r === 50 && q % 2 === 1)) { q += 1; }
    return (v < 0 || Object.is(v, -0) ? "-" : "+") + (q / 100).toFixed(2) + "%";
  }

  /* An instant as the pages write it: ISO 8601 UTC to the minute. */
  function minute(t) {
    return new Date(t * 1000).toISOString().slice(0, 16).replace("T", " ") + "Z";
  }

  function day(t) {
    return new Date(t * 1000).toISOString().slice(0, 10);
  }

  function el(tag, className, text) {
    var node = document.createElement(tag);
    if (className) { node.className = className; }
    if (text != null) { node.textContent = text; }
    return node;
  }

  /* The series on one time axis (the union of their times): uPlot data for the unit shown,
     plus each series' value and return carried forward, for the tooltip and the legend. */
  function align(payload, unit) {
    var times = new Set();
    payload.series.forEach(function (s) { s.t.forEach(function (t) { times.add(t); }); });
    var xs = Array.from(times).sort(function (a, b) { return a - b; });
    var index = new Map(xs.map(function (t, i) { return [t, i]; }));
    var data = [xs];
    var held = [];
    payload.series.forEach(function (s) {
      var ys = new Array(xs.length).fill(null);
      var usd = new Array(xs.length).fill(null);
      var ret = new Array(xs.length).fill(null);
      s.t.forEach(function (t, i) {
        var k = index.get(t);
        ys[k] = unit === "pct" ? s.pct[i] : s.value[i];
        usd[k] = s.value[i];
        ret[k] = s.pct[i];
      });
      for (var k = 1; k < xs.length; k++) {
        if (usd[k] == null) { usd[k] = usd[k - 1]; ret[k] = ret[k - 1]; }
      }
      data.push(ys);
      held.push({ usd: usd, pct: ret });
    });
    return { data: data, held: held };
  }

  /* Each distinct break-even path (a step function of time), with the series sharing it. */
  function breakEvens(payload) {
    var paths = new Map();
    payload.series.forEach(function (s) {
      var key = JSON.stringify([s.t, s.base]);
      if (!paths.has(key)) { paths.set(key, { t: s.t, base: s.base }); }
    });
    return Array.from(paths.values());
  }

  function hline(ctx, u, y) {
    ctx.beginPath();
    ctx.moveTo(u.bbox.left, y);
    ctx.lineTo(u.bbox.left + u.bbox.width, y);
    ctx.stroke();
  }

  /* A label over the plot, positioned in CSS pixels of the plotting area. */
  /* A label at (left, top) of the chart's layer; one that would cross the layer's right edge
     (a narrow screen, a marker near the end of the range) ends at ``left`` instead, unless its
     class already places it to the left of ``left`` (the break-even label). */
  function mark(layer, className, text, left, top) {
    var label = el("span", className, text);
    label.style.left = Math.round(left) + "px";
    label.style.top = Math.round(top) + "px";
    layer.appendChild(label);
    if (getComputedStyle(label).transform === "none" && left + label.offsetWidth > layer.clientWidth) {
      label.style.left = Math.max(0, Math.round(left - 6 - label.offsetWidth)) + "px";
    }
    return label;
  }

  /* Each shown series' maximum drawdown over the range, from the peak to the recovery (or the
     last point), in its colour: the whole height, labelled, when one series is shown; else a
     band per series along the bottom, so the shadings never cover each other. */
  function shadeDrawdowns(box, u, payload, layer) {
    var ctx = u.ctx;
    var shown = payload.series.filter(function (s, k) { return u.series[k + 1].show && s.drawdown; });
    var band = 5 * (window.devicePixelRatio || 1);
    var row = 0;
    payload.series.forEach(function (s, k) {
      if (!u.series[k + 1].show || !s.drawdown) { return; }
      var left = Math.max(u.bbox.left, u.valToPos(s.drawdown.peak, "x", true));
      var right = Math.min(u.bbox.left + u.bbox.width, u.valToPos(s.drawdown.end, "x", true));
      row += 1;
      if (right <= left) { return; }
      ctx.fillStyle = COLORS[k % COLORS.length];
      if (shown.length === 1) {
        ctx.globalAlpha = 0.12;
        ctx.fillRect(left, u.bbox.top, right - left, u.bbox.height);
      } else {
        ctx.globalAlpha = 0.55;
        ctx.fillRect(left, u.bbox.top + u.bbox.height - row * band, right - left, band - 1);
      }
      ctx.globalAlpha = 1;
      if (shown.length === 1) {
        mark(layer, "chart-mark drawdown", "max drawdown \u2212" + s.drawdown.pct.toFixed(1) + "%" +
          (s.drawdown.recovered ? ", recovered" : ", not recovered"),
          u.valToPos(s.drawdown.peak, "x") + 3, 16);
      }
    });
    box.dataset.drawdowns = String(shown.length);
  }

  function overlay(box, payload, unit) {
    return function (u) {
      var layer = box._marks || el("div");  /* none yet during uPlot's first draw */
      layer.textContent = "";
      var ctx = u.ctx;
      var width = u.over.clientWidth;
      ctx.save();
      shadeDrawdowns(box, u, payload, layer);
      ctx.strokeStyle = MUTED;
      ctx.lineWidth = 1;
      ctx.setLineDash([6, 4]);
      if (unit === "pct") {
        hline(ctx, u, u.valToPos(0, "y", true));
        mark(layer, "chart-mark break-even", "break-even 0%", width - 4, u.valToPos(0, "y"));
      } else {
        breakEvens(payload).forEach(function (path) {
          ctx.beginPath();
          path.t.forEach(function (t, i) {
            var x = u.valToPos(t, "x", true);
            var y = u.valToPos(path.base[i], "y", true);
            if (i === 0) { ctx.moveTo(x, y); } else { ctx.lineTo(x, u.valToPos(path.base[i - 1], "y", true)); ctx.lineTo(x, y); }
          });
          ctx.lineTo(u.bbox.left + u.bbox.width, u.valToPos(path.base[path.base.length - 1], "y", true));
          ctx.stroke();
          var last = path.base[path.base.length - 1];
          mark(layer, "chart-mark break-even", "break-even " + whole(last), width - 4,
            u.valToPos(last, "y"));
        });
      }
      ctx.setLineDash([2, 3]);
      var right = -Infinity;
      payload.decision_markers.forEach(function (t) {
        var x = u.valToPos(t, "x", true);
        if (x < u.bbox.left || x > u.bbox.left + u.bbox.width) { return; }
        ctx.beginPath();
        ctx.moveTo(x, u.bbox.top);
        ctx.lineTo(x, u.bbox.top + u.bbox.height);
        ctx.stroke();
        var left = u.valToPos(t, "x");
        if (left - right < 8) { return; }  /* too close to the previous label to read */
        var label = mark(layer, "chart-mark decision", "decision run " + day(t), left + 3, 2);
        if (label.offsetLeft - right < 8) { layer.removeChild(label); return; }  /* flipped onto it */
        label.title = "decision run " + minute(t);
        right = label.offsetLeft + label.offsetWidth;
      });
      ctx.restore();
    };
  }

  function tooltip(box, payload, held) {
    return function (u) {
      var tip = box._tip;
      var i = u.cursor.idx;
      if (i == null || u.cursor.left < 0) { tip.hidden = true; return; }
      var unit = box.dataset.unit;
      var rows = [];
      payload.series.forEach(function (s, k) {
        if (!u.series[k + 1].show || held[k].usd[i] == null) { return; }
        rows.push({ s: s, k: k, usd: held[k].usd[i], pct: held[k].pct[i] });
      });
      rows.sort(function (a, b) { return unit === "pct" ? b.pct - a.pct : b.usd - a.usd; });
      tip.textContent = "";
      tip.appendChild(el("div", "when", minute(u.data[0][i])));
      rows.forEach(function (r) {
        var row = el("div", "row");
        row.dataset.family = r.s.family_id;
        var swatch = el("span", "swatch");
        swatch.style.background = COLORS[r.k % COLORS.length];
        row.appendChild(swatch);
        row.appendChild(el("span", "name", r.s.label));
        row.appendChild(el("span", "usd", money(r.usd)));
        row.appendChild(el("span", "pct", pct(r.pct)));
        tip.appendChild(row);
      });
      tip.hidden = rows.length === 0;
      /* beside the cursor, flipped to its left near the right edge, never outside the chart */
      var over = u.over.getBoundingClientRect();
      var frame = box.getBoundingClientRect();
      var x = over.left - frame.left + u.cursor.left;
      var y = over.top - frame.top + u.cursor.top;
      var width = tip.offsetWidth;
      var left = x + 14 + width <= box.clientWidth ? x + 14 : x - 14 - width;
      if (left < 0) { left = Math.max(0, box.clientWidth - width); }
      var top = Math.min(y + 14, Math.max(0, box.clientHeight - tip.offsetHeight));
      tip.style.left = left + "px";
      tip.style.top = Math.max(0, top) + "px";
    };
  }

  /* Show every series, or only the isolated one. */
  function applyIsolation(box) {
    var u = box._plot;
    var payload = box._payload;
    payload.series.forEach(function (s, k) {
      var show = box._isolated == null || box._isolated === s.family_id;
      if (u.series[k + 1].show !== show) { u.setSeries(k + 1, { show: show }); }
    });
    box._legend.querySelectorAll("button").forEach(function (b) {
      var shown = box._isolated == null || box._isolated === b.dataset.family;
      b.setAttribute("aria-pressed", shown ? "true" : "false");
      b.classList.toggle("off", !shown);
    });
    box.dataset.isolated = box._isolated || "";
  }

  function legend(box, payload, held) {
    var u = box._plot;
    var unit = box.dataset.unit;
    var last = held.length ? held[0].usd.length - 1 : -1;
    var order = payload.series.map(function (s, k) { return k; });
    order.sort(function (a, b) {
      return unit === "pct" ? held[b].pct[last] - held[a].pct[last] : held[b].usd[last] - held[a].usd[last];
    });
    box._legend.textContent = "";
    order.forEach(function (k) {
      var s = payload.series[k];
      var b = el("button", "legend-item");
      b.type = "button";
      b.dataset.family = s.family_id;
      b.title = "Click to show " + s.label + " alone; click again to show every series";
      var swatch = el("span", "swatch");
      swatch.style.background = COLORS[k % COLORS.length];
      b.appendChild(swatch);
      b.appendChild(el("span", "name", s.label));
      b.appendChild(el("span", "legend-value",
        unit === "pct" ? pct(held[k].pct[last]) : money(held[k].usd[last])));
      var focus = function () { u.setSeries(k + 1, { focus: true }); };
      var blur = function () { u.setSeries(null, { focus: true }); };
      b.addEventListener("mouseenter", focus);
      b.addEventListener("focus", focus);
      b.addEventListener("mouseleave", blur);
      b.addEventListener("blur", blur);
      b.addEventListener("click", function () {
        box._isolated = box._isolated === s.family_id ? null : s.family_id;
        applyIsolation(box);
      });
      box._legend.appendChild(b);
    });
    box._legend.hidden = false;
  }

  /* The y scale covers the data and the break-even, with a little room. */
  function yRange(payload, unit) {
    return function (u, min, max) {
      var level = unit === "pct" ? 0 : payload.break_even;
      if (level != null) { min = Math.min(min, level); max = Math.max(max, level); }
      var pad = (max - min) * 0.06 || Math.abs(max) * 0.01 || 1;
      return [min - pad, max + pad];
    };
  }

  function draw(box, payload) {
    var unit = box.dataset.unit;
    if (box._plot) { box._plot.destroy(); box._plot = null; }
    box.textContent = "";
    var points = payload.series.reduce(function (n, s) { return n + s.points; }, 0);
    box.dataset.points = String(points);
    box.dataset.series = String(payload.series.length);
    box.dataset.first = payload.series.length ? String(payload.series[0].t[0]) : "";
    box.dataset.start = payload.start == null ? "" : String(payload.start);
    box.dataset.end = payload.end == null ? "" : String(payload.end);
    if (!payload.series.length) {
      box._legend.hidden = true;
      box.appendChild(el("p", "empty", "No portfolio snapshots in this range yet."));
      box.dataset.loaded = payload.range + ":" + unit;
      return;
    }
    var aligned = align(payload, unit);
    var series = [{}];
    payload.series.forEach(function (s, i) {
      series.push({
        label: s.label,
        stroke: COLORS[i % COLORS.length],
        width: 1.5,
        spanGaps: true,
        points: { show: s.points === 1 }
      });
    });
    var window_ = payload.start != null && payload.end != null && payload.start < payload.end;
    var opts = {
      width: Math.max(240, box.clientWidth || 800),
      height: HEIGHT,
      series: series,
      legend: { show: false },
      tzDate: function (ts) { return window.uPlot.tzDate(new Date(ts * 1000), "Etc/UTC"); },
      focus: { alpha: 0.2 },
      cursor: { points: { size: 7 } },
      scales: {
        x: window_ ? { time: true, range: function () { return [payload.start, payload.end]; } } : { time: true },
        y: { range: yRange(payload, unit) }
      },
      axes: [{}, { size: 90, values: function (u, vals) {
        return vals.map(function (v) { return unit === "pct" ? pct(v) : whole(v); });
      } }],
      hooks: {
        draw: [overlay(box, payload, unit)],
        setCursor: [tooltip(box, payload, aligned.held)]
      }
    };
    box._plot = new window.uPlot(opts, aligned.data, box);
    box._marks = el("div", "chart-marks");
    box._tip = el("div", "chart-tooltip");
    box._tip.hidden = true;
    box._tip.setAttribute("role", "status");
    box._plot.over.appendChild(box._marks);
    box.appendChild(box._tip);
    box._plot.over.addEventListener("mouseleave", function () { box._tip.hidden = true; });
    legend(box, payload, aligned.held);
    applyIsolation(box);
    box._plot.redraw(false, false);  /* the labels need the layer made above */
    box.dataset.loaded = payload.range + ":" + unit;
  }

  /* The static copy of `arena publish` has no server: its charts carry their curves in a
     <script type="application/json"> block named by data-inline (the ALL range only). */
  function load(box) {
    if (box.dataset.inline) {
      var block = document.getElementById(box.dataset.inline);
      box._payload = JSON.parse(block.textContent);
      draw(box, box._payload);
      return Promise.resolve();
    }
    var params = new URLSearchParams({ range: box.dataset.range });
    if (box.dataset.family) { params.set("family", box.dataset.family); }
    if (box.dataset.cohort) { params.set("cohort", box.dataset.cohort); }
    box.dataset.loading = "1";
    return fetch(box.dataset.src + "?" + params.toString(), { headers: { Accept: "application/json" } })
      .then(function (r) {
        if (!r.ok) { throw new Error("curves: HTTP " + r.status); }
        return r.json();
      })
      .then(function (payload) { box._payload = payload; draw(box, payload); })
      .catch(function (err) {
        box.textContent = "The chart could not be loaded (" + err.message + ").";
      })
      .finally(function () { delete box.dataset.loading; });
  }

  function setActive(buttons, active) {
    buttons.forEach(function (b) {
      b.classList.toggle("active", b === active);
      b.setAttribute("aria-pressed", b === active ? "true" : "false");
    });
  }

  function init(box) {
    var section = box.closest(".chart-box");
    var ranges = Array.from(section.querySelectorAll("button[data-range]"));
    var units = Array.from(section.querySelectorAll("button[data-unit]"));
    box._legend = section.querySelector("[data-legend]");
    box._isolated = null;
    ranges.forEach(function (b) {
      b.addEventListener("click", function () {
        setActive(ranges, b);
        box.dataset.range = b.dataset.range;
        load(box);
      });
    });
    units.forEach(function (b) {
      b.addEventListener("click", function () {
        setActive(units, b);
        box.dataset.unit = b.dataset.unit;
        if (box._payload) { draw(box, box._payload); }
      });
    });
    window.addEventListener("resize", function () {
      if (box._plot) { box._plot.setSize({ width: Math.max(240, box.clientWidth), height: HEIGHT }); }
    });
    load(box);
  }

  /* "in 2d 03:04:05" until the instant, then "due now". */
  function remaining(seconds) {
    if (seconds <= 0) { return "due now"; }
    var d = Math.floor(seconds / 86400);
    var rest = seconds % 86400;
    var hms = [Math.floor(rest / 3600), Math.floor(rest % 3600 / 60), rest % 60].map(function (n) {
      return String(n).padStart(2, "0");
    }).join(":");
    return "in " + (d ? d + "d " : "") + hms;
  }

  function countdown() {
    var tick = function () {
      var time = document.querySelector("[data-countdown]");
      var left = document.querySelector("[data-countdown-left]");
      if (!time || !left) { return; }
      var seconds = Math.round((Date.parse(time.getAttribute("datetime")) - Date.now()) / 1000);
      left.textContent = "(" + remaining(seconds) + ")";
      left.dataset.seconds = String(Math.max(0, seconds));
    };
    if (!document.querySelector("[data-countdown]")) { return; }
    tick();
    window.setInterval(tick, 1000);
  }

  /* Fetch the page again and swap in its tables and countdown, then reload the charts:
     the reader keeps the scroll position, the chart's range, unit and isolated series. */
  function refresh() {
    if (document.visibilityState === "hidden") { return Promise.resolve(); }
    return fetch(window.location.href, { headers: { Accept: "text/html" } })
      .then(function (r) {
        if (!r.ok) { throw new Error("refresh: HTTP " + r.status); }
        return r.text();
      })
      .then(function (text) {
        var fresh = new DOMParser().parseFromString(text, "text/html");
        document.querySelectorAll("main table[id], main time[data-countdown]").forEach(function (old) {
          var selector = old.id ? "#" + CSS.escape(old.id) : "time[data-countdown]";
          var replacement = fresh.querySelector(selector);
          if (replacement) { old.replaceWith(document.importNode(replacement, true)); }
        });
        return Promise.all(Array.from(document.querySelectorAll("[data-chart]")).map(load));
      })
      .then(function () {
        var root = document.documentElement;
        root.dataset.refreshed = String(Number(root.dataset.refreshed || 0) + 1);
      })
      .catch(function () { /* the next tick tries again; the page stays as it was */ });
  }

  /* The auto-refresh toggle: on by default, off by default under prefers-reduced-motion;
     the reader's choice is remembered (localStorage "arena.autorefresh" = "on" or "off"). */
  function autoRefresh() {
    var box = document.querySelector("input[data-autorefresh]");
    if (!box) { return; }
    var key = "arena.autorefresh";
    var stored = null;
    try { stored = window.localStorage.getItem(key); } catch (e) { stored = null; }
    var reduce = window.matchMedia("(prefers-reduced-motion: reduce)").matches;
    var timer = null;
    var apply = function () {
      if (timer) { window.clearInterval(timer); timer = null; }
      if (box.checked) {
        var seconds = Number(box.dataset.seconds) || 60;
        timer = window.setInterval(refresh, seconds * 1000);
      }
      document.documentElement.dataset.autorefresh = box.checked ? "on" : "off";
    };
    box.checked = stored ? stored === "on" : !reduce;
    box.addEventListener("change", function () {
      try { window.localStorage.setItem(key, box.checked ? "on" : "off"); } catch (e) { /* private mode */ }
      apply();
    });
    box.closest("label").hidden = false;
    apply();
  }

  document.addEventListener("DOMContentLoaded", function () {
    countdown();
    autoRefresh();
    if (!window.uPlot) { return; }
    document.querySelectorAll("[data-chart]").forEach(init);
  });
})();
