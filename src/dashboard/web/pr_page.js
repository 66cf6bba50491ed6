// #/pr/ID?file=PATH — the precision/recall arrays `dtrain coco-eval --report` writes
// (<type>_pr.json, layout in docs/maskrcnn.md) drawn from a job's directory: one chart per
// area range (<div class="chart" data-metric="precision, area all" data-series="T">), a curve
// per IoU threshold over the 101 recall thresholds, and the AP table per threshold and area.

import { getJson } from './api.js';
import { el, emptyNote, replaceChildren, tableHead } from './dom.js';
import { formatMetricValue } from './format.js';
import { MetricChart } from './metric_chart.js';
import { colorAt } from './palette.js';

const RECALL_AXIS = { label: 'recall', name: 'recall', format: (v) => v.toFixed(2) };

export function mountPrPage(root, route) {
  const jobId = route.params[0];
  const file = route.query.get('file') || '';
  document.title = `Precision/recall ${file} — dtrain dashboard`;
  const charts = [];
  const body = el('div', {}, emptyNote('Loading…'));
  replaceChildren(root,
    el('nav', { class: 'breadcrumb' },
      el('a', { href: '#/' }, 'Jobs'), ' / ',
      el('a', { href: `#/job/${encodeURIComponent(jobId)}` }, jobId), ' / precision/recall'),
    el('div', { class: 'page-header' }, el('h1', {}, `Precision/recall: ${file || '(no file given)'}`)),
    body);

  const path = `files/${encodeURIComponent(jobId)}/${file.split('/').map(encodeURIComponent).join('/')}`;
  getJson(path).then((report) => {
    if (!root.isConnected) return;
    const curves = readCurves(report);
    if (!curves) {
      replaceChildren(body, el('div', { class: 'error-note' }, `${file} is not a coco-eval report's precision/recall file.`));
      return;
    }
    const grid = el('div', { class: 'chart-grid' });
    replaceChildren(body, grid, apTable(curves));
    curves.areas.forEach((area, a) => {
      const chart = new MetricChart(`precision, area ${area}`, RECALL_AXIS);
      grid.append(chart.element);
      charts.push(chart);
      const series = curves.thresholds.map((t, i) => ({
        label: `IoU ${t.toFixed(2)}: AP ${formatAp(curves.ap[i][a])}`, color: colorAt(i),
      }));
      const ys = curves.thresholds.map((_, i) => curves.precision[i][a].map((p) => (p >= 0 ? p : null)));
      const points = ys.reduce((sum, y) => sum + y.filter((v) => v !== null).length, 0);
      chart.show(series, [curves.recall, ...ys], points, { 'data-series': series.length });
    });
  }).catch((err) => {
    if (root.isConnected) replaceChildren(body, el('div', { class: 'error-note' }, `Could not load ${file}: ${err.message}`));
  });

  return { unmount() { for (const chart of charts) chart.destroy(); } };
}

// The arrays the page draws, checked for shape; null when the file is not such a report.
function readCurves(report) {
  if (!report || typeof report !== 'object') return null;
  const thresholds = report.iou_thresholds;
  const recall = report.recall_thresholds;
  const areas = Array.isArray(report.areas) ? report.areas.map((a) => String(a?.label ?? '?')) : null;
  const { precision, ap } = report;
  const shaped = Array.isArray(thresholds) && Array.isArray(recall) && areas && Array.isArray(precision)
    && Array.isArray(ap) && precision.length === thresholds.length && ap.length === thresholds.length
    && precision.every((perArea) => Array.isArray(perArea) && perArea.length === areas.length
      && perArea.every((values) => Array.isArray(values) && values.length === recall.length));
  if (!shaped) return null;
  return { thresholds, recall, areas, precision, ap };
}

// AP at each IoU threshold (rows) for each area range (columns).
function apTable(curves) {
  return el('section', { class: 'card' },
    el('div', { class: 'card-header' }, el('h2', {}, 'AP per IoU threshold and area (maxDets 100)')),
    el('table', { class: 'table' },
      tableHead(['IoU', ...curves.areas], curves.areas),
      el('tbody', {}, curves.thresholds.map((t, i) =>
        el('tr', {}, el('td', {}, t.toFixed(2)),
          curves.areas.map((_, a) => el('td', { class: 'num' }, formatAp(curves.ap[i]?.[a]))))))));
}

function formatAp(value) {
  return Number.isFinite(value) && value >= 0 ? formatMetricValue(value) : 'n/a';
}
