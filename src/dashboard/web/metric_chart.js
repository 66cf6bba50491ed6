// One metric as a uPlot line chart in a card: <div class="chart" data-metric="NAME"
// data-points="N">. Callers hand it whole series (labels, colors, aligned data) each time
// something changed; it redraws with setData, rebuilding the plot only when the set of
// series changed (uPlot fixes its series at construction).

import { el, setAttr } from './dom.js';
import { formatMetricValue } from './format.js';

const PLOT_HEIGHT = 220;

// The x axis of metric curves: seconds since the job started.
const TIME_AXIS = { label: 'seconds since start', name: 'time', format: (v) => `${v.toFixed(1)} s` };

export class MetricChart {
  // `xAxis`: {label, name, format(value)} for curves over something else (recall).
  constructor(metricName, xAxis = TIME_AXIS) {
    this.metricName = metricName;
    this.xAxis = xAxis;
    this.plotHost = el('div', { class: 'chart-plot' });
    this.element = el('div', { class: 'chart card', 'data-metric': metricName, 'data-points': '0' },
      el('div', { class: 'chart-title' }, metricName),
      this.plotHost);
    this.plot = null;
    this.seriesKey = null;
    this.zoomed = false; // the user dragged a range: keep it while new samples arrive
    this.resizeObserver = new ResizeObserver(() => this.fitWidth());
    this.resizeObserver.observe(this.plotHost);
  }

  // series: [{label, color}], data: [xs, ys per series], points: samples plotted.
  show(series, data, points, extraAttributes = {}) {
    setAttr(this.element, 'data-points', points);
    for (const [name, value] of Object.entries(extraAttributes)) setAttr(this.element, name, value);
    const key = JSON.stringify(series);
    if (!this.plot || key !== this.seriesKey) {
      this.rebuild(series, data);
      this.seriesKey = key;
    } else {
      this.plot.setData(data, !this.zoomed);
    }
  }

  rebuild(series, data) {
    this.plot?.destroy();
    this.zoomed = false;
    if (typeof window.uPlot !== 'function') {
      this.plotHost.textContent = 'The chart library (uPlot) did not load.';
      return;
    }
    this.plot = new window.uPlot(this.options(series), data, this.plotHost);
  }

  options(series) {
    return {
      width: this.currentWidth(),
      height: PLOT_HEIGHT,
      scales: { x: { time: false } },
      legend: { show: series.length > 1 },
      cursor: { drag: { x: true, y: false } },
      series: [
        { label: this.xAxis.name, value: (u, v) => (v == null ? '—' : this.xAxis.format(v)) },
        ...series.map((s) => ({
          label: s.label,
          stroke: s.color,
          width: 1.5,
          spanGaps: true, // sources sample at different times; join each one's points
          value: (u, v) => formatMetricValue(v),
        })),
      ],
      axes: [
        { label: this.xAxis.label, labelSize: 24, stroke: '#5b6472', grid: { stroke: '#eef0f3' } },
        {
          size: 64, stroke: '#5b6472', grid: { stroke: '#eef0f3' },
          values: (u, splits) => splits.map(formatMetricValue),
        },
      ],
      hooks: { setScale: [(u, key) => { if (key === 'x') this.zoomed = isZoomedIn(u); }] },
    };
  }

  currentWidth() {
    return Math.max(200, this.plotHost.clientWidth || 600);
  }

  fitWidth() {
    if (!this.plot) return;
    const width = this.currentWidth();
    if (Math.abs(width - this.plot.width) > 1) this.plot.setSize({ width, height: PLOT_HEIGHT });
  }

  destroy() {
    this.resizeObserver.disconnect();
    this.plot?.destroy();
    this.plot = null;
    this.element.remove();
  }
}

// Whether the x scale shows less than all the data (after a drag-to-zoom; a double click
// resets it to everything).
function isZoomedIn(u) {
  const xs = u.data[0];
  if (!xs || xs.length < 2) return false;
  const { min, max } = u.scales.x;
  return min > xs[0] || max < xs[xs.length - 1];
}

// Keeps a container's charts in sync with a list of metric names: creates the missing ones,
// drops the gone ones and keeps them in the given order.
export class ChartGrid {
  constructor(container) {
    this.container = container;
    this.charts = new Map();
  }

  chartFor(name) {
    let chart = this.charts.get(name);
    if (!chart) {
      chart = new MetricChart(name);
      this.charts.set(name, chart);
    }
    return chart;
  }

  arrange(names) {
    const wanted = new Set(names);
    for (const [name, chart] of this.charts) {
      if (!wanted.has(name)) {
        chart.destroy();
        this.charts.delete(name);
      }
    }
    names.forEach((name, index) => {
      const element = this.chartFor(name).element;
      const occupant = this.container.children[index];
      if (occupant !== element) this.container.insertBefore(element, occupant || null);
    });
  }

  destroy() {
    for (const chart of this.charts.values()) chart.destroy();
    this.charts.clear();
  }
}
