/* arena dashboard charts: portfolio value per family from /api/v1/curves, drawn with the
   vendored uPlot. No inline script anywhere: every chart is a [data-chart] element whose
   data- attributes say what to fetch; tables never depend on this file. */
(function () {
  "use strict";

  var COLORS = ["#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#ca8a04",
    "#db2777", "#4b5563", "#65a30d", "#7c3aed", "#0d9488"];

  function money(v) {
    if (v == null) { return "-"; }
    return (v < 0 ? "-$" : "$") + Math.abs(v).toLocaleString("en-US",
      { minimumFractionDigits: 2, maximumFractionDigits: 2 });
  }

  function whole(v) {
    return (v < 0 ? "-$" : "$") + Math.abs(Math.round(v)).toLocaleString("en-US");
  }

  function pct(v) {
    return v == null ? "-" : (v > 0 ? "+" : "") + v.toFixed(2) + "%";
  }

  function align(payload, unit) {
    var times = new Set();
    payload.series.forEach(function (s) { s.t.forEach(function (t) { times.add(t); }); });
    var xs = Array.from(times).sort(function (a, b) { return a - b; });
    var index = new Map(xs.map(function (t, i) { return [t, i]; }));
    var data = [xs];
    payload.series.forEach(function (s) {
      var ys = new Array(xs.length).fill(null);
      var values = unit === "pct" ? s.pct : s.value;
      s.t.forEach(function (t, i) { ys[index.get(t)] = values[i]; });
      data.push(ys);
    });
    return data;
  }

  function overlay(box, payload, unit) {
    return function (u) {
      var ctx = u.ctx;
      ctx.save();
      var level = unit === "pct" ? 0 : payload.break_even;
      if (level != null) {
        var y = u.valToPos(level, "y", true);
        ctx.strokeStyle = "#6b7280";
        ctx.lineWidth = 1;
        ctx.setLineDash([6, 4]);
        ctx.beginPath();
        ctx.moveTo(u.bbox.left, y);
        ctx.lineTo(u.bbox.left + u.bbox.width, y);
        ctx.stroke();
      }
      ctx.setLineDash([2, 3]);
      ctx.strokeStyle = "#9ca3af";
      payload.decision_markers.forEach(function (t) {
        var x = u.valToPos(t, "x", true);
        if (x < u.bbox.left || x > u.bbox.left + u.bbox.width) { return; }
        ctx.beginPath();
        ctx.moveTo(x, u.bbox.top);
        ctx.lineTo(x, u.bbox.top + u.bbox.height);
        ctx.stroke();
      });
      ctx.restore();
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
    box.dataset.loaded = payload.range + ":" + unit;
    if (!payload.series.length) {
      var empty = document.createElement("p");
      empty.className = "empty";
      empty.textContent = "No portfolio snapshots in this range yet.";
      box.appendChild(empty);
      return;
    }
    var series = [{}];
    payload.series.forEach(function (s, i) {
      series.push({
        label: s.display_name + (s.kind === "baseline" ? " (baseline)" : ""),
        stroke: COLORS[i % COLORS.length],
        width: 1.5,
        spanGaps: true,
        value: function (u, v) { return unit === "pct" ? pct(v) : money(v); }
      });
    });
    var opts = {
      width: Math.max(300, box.clientWidth || 800),
      height: 320,
      series: series,
      scales: { x: { time: true } },
      axes: [{}, { size: 90, values: function (u, vals) {
        return vals.map(function (v) { return unit === "pct" ? pct(v) : whole(v); });
      } }],
      hooks: { draw: [overlay(box, payload, unit)] }
    };
    box._plot = new window.uPlot(opts, align(payload, unit), box);
  }

  function load(box) {
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
    buttons.forEach(function (b) { b.classList.toggle("active", b === active); });
  }

  function init(box) {
    var section = box.closest(".chart-box");
    var ranges = Array.from(section.querySelectorAll("button[data-range]"));
    var units = Array.from(section.querySelectorAll("button[data-unit]"));
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
      if (box._plot) { box._plot.setSize({ width: Math.max(300, box.clientWidth), height: 320 }); }
    });
    load(box);
  }

  document.addEventListener("DOMContentLoaded", function () {
    if (!window.uPlot) { return; }
    document.querySelectorAll("[data-chart]").forEach(init);
  });
})();
