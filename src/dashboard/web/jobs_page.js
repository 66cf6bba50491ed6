// #/ — every job in one table, refreshed every second. Rows are keyed by job id and updated
// in place (not rebuilt), so checkboxes, hover and a click in progress survive a refresh.

import { getJson } from './api.js';
import { el, emptyNote, replaceChildren, setText, tableHead } from './dom.js';
import { formatDuration, formatLocalTime, formatMetricValue, formatShape, MISSING } from './format.js';
import { startPolling } from './poll.js';
import { isActiveStatus, liveDuration, sortNewestFirst } from './job_state.js';
import { statusBadge, updateStatusBadge } from './status_badge.js';

const POLL_MS = 1000;

export function mountJobsPage(root) {
  document.title = 'Jobs — dtrain dashboard';
  const selected = new Set();
  const rows = new Map(); // job id -> {tr, cells, link, badge, metricsKey}
  let jobs = [];
  let receivedAt = 0; // Date.now() when `jobs` arrived, to tick running durations locally

  const compareButton = el('button', { class: 'button primary', disabled: true, onclick: openCompare },
    'Compare selected');
  const selectionNote = el('span', { class: 'muted' });
  const message = el('div', { class: 'page-message' });
  const tbody = el('tbody');
  const table = el('table', { class: 'table jobs-table' }, jobsTableHead(), tbody);

  replaceChildren(root,
    el('div', { class: 'page-header' },
      el('h1', {}, 'Jobs'),
      el('div', { class: 'toolbar' }, selectionNote, compareButton)),
    message,
    el('div', { class: 'card table-card' }, table));

  function openCompare() {
    const ids = sortNewestFirst(jobs).map((job) => String(job.id)).filter((id) => selected.has(id));
    window.location.hash = `#/compare?jobs=${ids.map(encodeURIComponent).join(',')}`;
  }

  function onToggle(id, checked) {
    if (checked) selected.add(id);
    else selected.delete(id);
    updateSelectionUi();
  }

  function updateSelectionUi() {
    compareButton.disabled = selected.size < 2;
    setText(selectionNote, selected.size ? `${selected.size} selected` : 'Select two or more jobs to compare');
  }

  async function refresh() {
    try {
      const data = await getJson('api/jobs');
      jobs = Array.isArray(data && data.jobs) ? data.jobs.filter((job) => job && job.id != null) : [];
      receivedAt = Date.now();
      replaceChildren(message);
    } catch (err) {
      const note = el('div', { class: 'error-note' }, `Could not load the jobs: ${err.message}`);
      if (!err.isNetwork) replaceChildren(message, note);
    }
    render();
  }

  function render() {
    const ordered = sortNewestFirst(jobs);
    const present = new Set(ordered.map((job) => String(job.id)));
    for (const [id, row] of rows) {
      if (!present.has(id)) {
        row.tr.remove();
        rows.delete(id);
        selected.delete(id);
      }
    }
    ordered.forEach((job, index) => {
      const id = String(job.id);
      let row = rows.get(id);
      if (!row) {
        row = createRow(id, onToggle);
        rows.set(id, row);
      }
      updateRow(row, job, receivedAt);
      // Move a row only when it is out of place: moving a node cancels a click on it.
      if (tbody.children[index] !== row.tr) tbody.insertBefore(row.tr, tbody.children[index] || null);
    });
    if (ordered.length === 0 && !tbody.querySelector('.empty-row')) {
      const note = emptyNote('No jobs yet. Jobs appear here once a job runner writes them.');
      tbody.append(el('tr', { class: 'empty-row' }, el('td', { colspan: 10 }, note)));
    } else if (ordered.length > 0) {
      tbody.querySelector('.empty-row')?.remove();
    }
    updateSelectionUi();
  }

  // Durations of running jobs tick between polls, and keep ticking if a poll fails.
  function tickDurations() {
    for (const job of jobs) {
      const row = rows.get(String(job.id));
      if (row && isActiveStatus(job.status)) setText(row.cells.duration, formatDuration(liveDuration(job, receivedAt)));
    }
  }

  const poller = startPolling(refresh, POLL_MS);
  const ticker = setInterval(tickDurations, 1000);
  return {
    unmount() {
      poller.stop();
      clearInterval(ticker);
    },
  };
}

function jobsTableHead() {
  const names = ['', 'Name', 'Status', 'Hosts × procs', 'Engine', 'Backend', 'Started', 'Duration',
    'Final metrics', 'Failure reason'];
  return tableHead(names, ['Duration']);
}

function createRow(id, onToggle) {
  const checkbox = el('input', {
    type: 'checkbox', 'aria-label': `select ${id}`, onchange: (e) => onToggle(id, e.target.checked),
  });
  const link = el('a', { href: `#/job/${encodeURIComponent(id)}`, class: 'job-link' }, id);
  const badge = statusBadge('Unknown');
  const cells = {
    select: el('td', { class: 'select' }, checkbox),
    name: el('td', { class: 'name' }, link),
    status: el('td', { class: 'status' }, badge),
    shape: el('td', { class: 'shape nowrap' }),
    engine: el('td', { class: 'engine' }),
    backend: el('td', { class: 'backend' }),
    started: el('td', { class: 'started nowrap' }),
    duration: el('td', { class: 'duration num nowrap' }),
    metrics: el('td', { class: 'final-metrics-cell' }),
    failure: el('td', { class: 'failure' }),
  };
  const tr = el('tr', { 'data-job': id }, Object.values(cells));
  return { tr, cells, link, badge, metricsKey: null };
}

function updateRow(row, job, receivedAt) {
  const { cells } = row;
  setText(row.link, job.name || job.id);
  row.link.title = job.dir ? `${job.id} — ${job.dir}` : String(job.id);
  updateStatusBadge(row.badge, job.status);
  setText(cells.shape, formatShape(job.instance_count, job.processes_per_host));
  setText(cells.engine, job.engine || MISSING);
  setText(cells.backend, job.backend || MISSING);
  setText(cells.started, formatLocalTime(job.started_at));
  setText(cells.duration, formatDuration(liveDuration(job, receivedAt)));
  setText(cells.failure, job.failure_reason || '');
  cells.failure.title = job.failure_reason || '';
  updateMetricsCell(row, job.final_metrics);
}

function updateMetricsCell(row, finalMetrics) {
  const entries = Object.entries(finalMetrics && typeof finalMetrics === 'object' ? finalMetrics : {});
  const key = JSON.stringify(entries);
  if (key === row.metricsKey) return;
  row.metricsKey = key;
  // Spaces between the chips keep the cell's text readable when copied: "a=1 b=2".
  const chip = (name, value) => el('span', { class: 'metric-chip' }, `${name}=${formatMetricValue(value)}`);
  const chips = entries.flatMap(([name, value], i) => [i ? ' ' : null, chip(name, value)]);
  replaceChildren(row.cells.metrics, chips.length ? chips : MISSING);
}
