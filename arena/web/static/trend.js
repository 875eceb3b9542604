/* arena dashboard: the trend charts (arena/web/trend.py), drawn with the vendored uPlot from the
   JSON block the page carries (data-inline), so they need no request of their own.

   - data-trend-chart="family": a family's weekly return (%, left axis) and, under methodology
     v2, its adjusted score and alpha (right axis), week by week; a dashed vertical line marks
     each week where its lineage changed, labelled with what changed.
   - data-trend-chart="ranks": every family's cumulative rank by week (1 at the top).

   uPlot's own legend gives every series' value at the cursor. The tables beside the charts
   hold the same numbers and need no JavaScript. */
(function () {
  "use strict";

  var COLORS = ["#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#ca8a04",
    "#db2777", "#65a30d", "#7c3aed", "#0d9488", "#be123c"];
  var MUTED = "#6b7280";
  var HEIGHT = 280;

  function seconds(iso) { return Date.parse(iso) / 1000; }

  function fixed(v, places) { return v == null ? "-" : v.toFixed(places); }

  function pct(v) { return v == null ? "-" : (v < 0 ? "" : "+") + v.toFixed(2) + "%"; }

  function el(tag, className, text) {
    var node = document.createElement(tag);
    if (className) { node.className = className; }
    if (text != null) { node.textContent = text; }
    return node;
  }

  function base(box, series, scales, axes, hooks) {
    return {
      width: Math.max(240, box.clientWidth || 800),
      height: HEIGHT,
      series: series,
      scales: scales,
      axes: axes,
      hooks: hooks || {},
      legend: { show: true, live: true },
      tzDate: function (ts) { return window.uPlot.tzDate(new Date(ts * 1000), "Etc/UTC"); }
    };
  }

  /* Dashed lines at the weeks where the lineage changed, each labelled with what changed. */
  function lineageMarks(box, changes) {
    return function (u) {
      var layer = box._marks || el("div");
      layer.textContent = "";
      var ctx = u.ctx;
      ctx.save();
      ctx.strokeStyle = MUTED;
      ctx.lineWidth = 1;
      ctx.setLineDash([6, 4]);
      changes.forEach(function (change, i) {
        var t = seconds(change.week_start);
        var x = u.valToPos(t, "x", true);
        ctx.beginPath();
        ctx.moveTo(x, u.bbox.top);
        ctx.lineTo(x, u.bbox.top + u.bbox.height);
        ctx.stroke();
        var text = change.week_start.slice(0, 10) + ": " + change.lineage.join("; ");
        var label = el("span", "chart-mark lineage", text);
        label.title = "lineage changed " + text;
        var left = u.valToPos(t, "x") + 3;
        label.style.left = Math.round(left) + "px";
        label.style.top = Math.round(2 + 16 * i) + "px";
        layer.appendChild(label);
        if (left + label.offsetWidth > layer.clientWidth) {  /* ends at its line instead */
          label.style.left = Math.max(0, Math.round(left - 6 - label.offsetWidth)) + "px";
        }
      });
      ctx.restore();
    };
  }

  function family(box, data) {
    var rows = data.rows;
    var xs = rows.map(function (r) { return seconds(r.week_start); });
    var v2 = data.rank_by === "adjusted";
    var series = [{}, {
      label: "weekly return", stroke: COLORS[0], width: 2, scale: "pct", spanGaps: true,
      value: function (u, v) { return pct(v); }, points: { show: true }
    }];
    var values = [xs, rows.map(function (r) { return r.weekly_return == null ? null : r.weekly_return * 100; })];
    var axes = [{}, { scale: "pct", size: 70, values: function (u, vals) { return vals.map(pct); } }];
    var scales = { x: { time: true }, pct: {} };
    if (v2) {
      series.push({ label: "adjusted score", stroke: COLORS[1], width: 1.5, scale: "score", spanGaps: true,
        value: function (u, v) { return fixed(v, 3); }, points: { show: true } });
      series.push({ label: "alpha", stroke: COLORS[2], width: 1.5, scale: "score", spanGaps: true, dash: [4, 3],
        value: function (u, v) { return fixed(v, 3); }, points: { show: true } });
      values.push(rows.map(function (r) { return r.adjusted; }));
      values.push(rows.map(function (r) { return r.alpha; }));
      scales.score = {};
      axes.push({ scale: "score", side: 1, size: 60, grid: { show: false },
        values: function (u, vals) { return vals.map(function (v) { return fixed(v, 2); }); } });
    }
    return new window.uPlot(base(box, series, scales, axes, { draw: [lineageMarks(box, data.changes)] }), values, box);
  }

  function ranks(box, data) {
    var xs = data.weeks.map(seconds);
    var n = data.families.length;
    var series = [{}];
    var values = [xs];
    data.families.forEach(function (f, i) {
      series.push({ label: f.label, stroke: COLORS[i % COLORS.length], width: 1.5, spanGaps: true,
        points: { show: true }, value: function (u, v) { return v == null ? "-" : String(-v); } });
      values.push(f.ranks.map(function (r) { return r == null ? null : -r; }));
    });
    var scales = { x: { time: true }, y: { range: function () { return [-(n + 0.5), -0.5]; } } };
    var axes = [{}, { size: 40, incrs: [1], values: function (u, vals) {
      return vals.map(function (v) { return Number.isInteger(v) && v < 0 ? String(-v) : ""; });
    } }];
    return new window.uPlot(base(box, series, scales, axes), values, box);
  }

  function init(box) {
    var data = JSON.parse(document.getElementById(box.dataset.inline).textContent);
    box.textContent = "";
    box._marks = null;
    var plot = (box.dataset.trendChart === "family" ? family : ranks)(box, data);
    box._marks = el("div", "chart-marks");
    plot.over.appendChild(box._marks);
    plot.redraw(false, false);  /* the labels need the layer made above */
    box.dataset.loaded = "1";
    window.addEventListener("resize", function () {
      plot.setSize({ width: Math.max(240, box.clientWidth), height: HEIGHT });
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    if (!window.uPlot) { return; }
    document.querySelectorAll("[data-trend-chart]").forEach(init);
  });
})();
