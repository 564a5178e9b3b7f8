(function () {
  function draw(el) {
    var spec = JSON.parse(el.querySelector('script[type="application/json"]').textContent);
    var stepped = uPlot.paths.stepped({align: 1});
    var series = [{label: spec.xlabel}].concat(spec.series.map(function (s) {
      return {label: s.label, stroke: s.color, width: 1.2, dash: s.dash ? [6, 4] : undefined,
              fill: s.fill ? s.color + "40" : undefined, paths: s.step ? stepped : undefined};
    }));
    var data = [spec.x].concat(spec.series.map(function (s) { return s.values; }));
    var opts = {title: spec.title, width: Math.max(400, el.clientWidth - 10), height: 340,
                scales: {x: {time: false}}, series: series,
                axes: [{label: spec.xlabel}, {label: spec.ylabel, size: 60}],
                cursor: {drag: {x: true, y: false}}};
    el.querySelector(".rtcc-fallback").remove();
    window.rtccCharts.push(new uPlot(opts, data, el));
  }
  window.rtccCharts = [];  // the uPlot instances, for a console (and the browser test)
  document.querySelectorAll(".rtcc-chart").forEach(draw);
})();
