// #/timeline/ID?file=NAME — one of the runtime's Chrome-trace timelines: lanes of spans on a
// canvas (<canvas id="timeline" data-spans="N">), an activity legend, and a table of where
// the time went per activity. Loaded once; "Reload" fetches it again for a job still writing.

import { getJson, jobApiPath } from './api.js';
import { el, emptyNote, replaceChildren, tableHead } from './dom.js';
import { formatMicros } from './format.js';
import { colorAt } from './palette.js';
import { TimelineData } from './timeline_data.js';
import { TimelineView } from './timeline_view.js';

const RETRY_MS = 2000;
const HELP = 'Wheel: zoom · Drag: pan · Shift+wheel: scroll tracks · Double-click: show all';

export function mountTimelinePage(root, route) {
  const jobId = route.params[0];
  const file = route.query.get('file') || '';
  document.title = `Timeline ${file} — dtrain dashboard`;
  let view = null;
  let destroyed = false;
  let retryTimer = null;

  const body = el('div', { class: 'timeline-body' }, emptyNote('Loading the timeline…'));
  const reload = el('button', { class: 'button', onclick: load }, 'Reload');
  replaceChildren(root,
    el('nav', { class: 'breadcrumb' },
      el('a', { href: '#/' }, 'Jobs'), ' / ',
      el('a', { href: `#/job/${encodeURIComponent(jobId)}` }, jobId), ' / timeline'),
    el('div', { class: 'page-header' },
      el('h1', {}, `Timeline: ${file || '(no file given)'}`),
      el('div', { class: 'toolbar' }, reload)),
    body);

  async function load() {
    reload.disabled = true;
    try {
      const reply = await getJson(jobApiPath(jobId, '/timeline'), { file });
      if (!destroyed) show(new TimelineData(reply || {}));
    } catch (err) {
      if (destroyed) return;
      if (err.isNetwork) {
        // The banner says the server is gone; try again until it is back.
        clearTimeout(retryTimer);
        retryTimer = setTimeout(load, RETRY_MS);
        return;
      }
      const text = err.isNotFound
        ? `No timeline “${file}” for job “${jobId}”: ${err.message}`
        : `Could not load the timeline: ${err.message}`;
      replaceChildren(body, el('div', { class: 'error-note' }, text));
    } finally {
      reload.disabled = false;
    }
  }

  function show(data) {
    view?.destroy();
    const colors = data.activities.map((_, i) => colorAt(i));
    const canvas = el('canvas', { id: 'timeline', 'data-spans': data.spanCount });
    const tooltip = el('div', { class: 'timeline-tooltip', hidden: true });
    replaceChildren(body,
      data.truncated ? el('div', { class: 'notice card' },
        'The timeline file is incomplete (still being written, or cut short); showing what could be read.') : null,
      el('section', { class: 'card' },
        el('div', { class: 'card-header' },
          el('h2', {}, `${data.spanCount.toLocaleString()} spans on ${data.lanes.length} tracks`),
          el('span', { class: 'muted' }, HELP)),
        activityLegend(data.activities, colors),
        el('div', { class: 'timeline-canvas-box' }, canvas, tooltip)),
      breakdown(data, colors, (step) => {
        if (step) view?.showRange(step.start, step.end);
        else view?.resetView();
      }));
    if (data.spanCount === 0) canvas.insertAdjacentElement('afterend', emptyNote('The timeline holds no spans.'));
    view = new TimelineView(canvas, tooltip, data, colors);
  }

  load();
  return {
    unmount() {
      destroyed = true;
      clearTimeout(retryTimer);
      view?.destroy();
    },
  };
}

function activityLegend(activities, colors) {
  return el('ul', { class: 'legend' }, activities.map((name, i) =>
    el('li', {}, el('span', { class: 'swatch', style: `background:${colors[i]}` }), name)));
}

// Where the time went, over the whole timeline or in one step (<select id="timeline-step">:
// choosing a step also zooms the lanes to it; `onStep(step or null)`).
function breakdown(data, colors, onStep) {
  const steps = data.steps();
  const table = el('div', {}, summaryTable(data.activitySummary(), colors));
  const picker = el('select', {
    id: 'timeline-step',
    onchange: () => {
      const step = picker.value === '' ? null : steps[Number(picker.value)];
      replaceChildren(table, summaryTable(data.activitySummary(step), colors));
      onStep(step);
    },
  }, el('option', { value: '' }, 'whole timeline'), steps.map((step, i) =>
    el('option', { value: String(i) },
      `step ${i + 1} of ${steps.length}: ${formatMicros(step.end - step.start)} from ${formatMicros(step.start - data.start)}`)));
  return el('section', { class: 'card', 'data-steps': steps.length },
    el('div', { class: 'card-header' }, el('h2', {}, 'Time per activity'),
      steps.length ? el('label', { class: 'log-picker' }, 'Show ', picker) : null),
    table);
}

// Per activity: the spans' count, total, mean and longest duration and its share of all span
// time (spans of different tensors overlap, so shares are of the sum, not of the wall-clock time).
const SUMMARY_COLUMNS = ['Activity', 'Spans', 'Total', 'Mean', 'Longest', 'Share'];

function summaryTable(rows, colors) {
  return rows.length === 0 ? emptyNote('No spans.') : el('table', { class: 'table summary-table' },
      tableHead(SUMMARY_COLUMNS, ['Spans', 'Total', 'Mean', 'Longest']),
      el('tbody', {}, rows.map((row) =>
        el('tr', { 'data-activity': row.name },
          el('td', {}, el('span', { class: 'swatch', style: `background:${colors[row.index]}` }), row.name),
          el('td', { class: 'num' }, row.count.toLocaleString()),
          el('td', { class: 'num' }, formatMicros(row.total)),
          el('td', { class: 'num' }, formatMicros(row.mean)),
          el('td', { class: 'num' }, formatMicros(row.max)),
          el('td', { class: 'share' }, shareBar(row.share, colors[row.index]))))));
}

function shareBar(share, color) {
  const percent = `${(share * 100).toFixed(1)}%`;
  return el('div', { class: 'share-cell' },
    el('div', { class: 'share-track' },
      el('div', { class: 'share-fill', style: `width:${percent};background:${color}` })),
    el('span', { class: 'num' }, percent));
}
