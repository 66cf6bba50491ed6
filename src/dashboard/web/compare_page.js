// #/compare?jobs=A,B[,C] — the jobs' metrics side by side: for every metric any of them
// produced, one chart with one series per job, x in seconds since each job's own start.
//
// A job whose metric came from several sources (ranks, hosts) is represented by ONE of them:
// the lowest rank, ties broken by host name (rank 0 on algo-1 in a usual job). Averaging
// across ranks per sample index would look smoother but invents points when ranks print at
// different moments or different counts, and most training scripts log from rank 0 anyway.
//
// Changing the selection (the picker, or editing the URL) rewrites the hash; the router hands
// the new list to update(), which keeps the samples already fetched for jobs still selected.

import { getJson, jobApiPath, streamHasMore, streamRestarted } from './api.js';
import { el, emptyNote, replaceChildren } from './dom.js';
import { isActiveStatus, sortNewestFirst } from './job_state.js';
import { ChartGrid } from './metric_chart.js';
import { alignColumns, MetricSamples } from './metric_series.js';
import { colorAt } from './palette.js';
import { startPolling } from './poll.js';
import { statusBadge } from './status_badge.js';

const ACTIVE_POLL_MS = 1000;
const ENDED_POLL_MS = 5000;
const JOB_LIST_POLL_MS = 3000;

export function mountComparePage(root, route) {
  document.title = 'Compare — dtrain dashboard';
  let selection = []; // job ids, in the order of the URL (which fixes their colors)
  let jobList = []; // every job, for the picker and for names and statuses
  const tracked = new Map(); // job id -> {samples, poller, error}

  const picker = el('div', { class: 'job-picker' });
  const legend = el('ul', { class: 'compare-legend' });
  const note = el('div', { class: 'metrics-note' });
  const grid = el('div', { class: 'chart-grid' });
  const charts = new ChartGrid(grid);
  replaceChildren(root,
    el('div', { class: 'page-header' }, el('h1', {}, 'Compare jobs')),
    el('section', { class: 'card picker-card' }, el('h2', {}, 'Jobs'), picker),
    legend, note, grid);

  const jobById = (id) => jobList.find((job) => String(job.id) === id);
  const displayName = (id) => jobById(id)?.name || id;

  function select(ids) {
    selection = [...new Set(ids.filter(Boolean))];
    for (const [id, entry] of tracked) {
      if (!selection.includes(id)) {
        entry.poller.stop();
        tracked.delete(id);
      }
    }
    for (const id of selection) if (!tracked.has(id)) tracked.set(id, trackJob(id));
    renderPicker();
    renderLegend();
    redraw();
  }

  function trackJob(id) {
    const entry = { samples: new MetricSamples(), error: null, poller: null };
    // Unknown jobs (not in the list yet) are polled fast too: they are probably starting.
    const interval = () => {
      const job = jobById(id);
      return !job || isActiveStatus(job.status) ? ACTIVE_POLL_MS : ENDED_POLL_MS;
    };
    entry.poller = startPolling(() => pollMetrics(id, entry), interval);
    return entry;
  }

  async function pollMetrics(id, entry) {
    let changed = new Set();
    let error = null;
    let more = false;
    try {
      const from = entry.samples.next;
      const reply = await getJson(jobApiPath(id, '/metrics'), { from });
      if (streamRestarted(from, reply)) entry.samples = new MetricSamples();
      changed = entry.samples.add(reply.samples);
      if (Number.isFinite(reply.next)) entry.samples.next = reply.next;
      more = streamHasMore(reply, changed.size ? reply.samples.length : 0);
    } catch (err) {
      error = err.isNetwork ? null : err.isNotFound ? 'no such job' : err.message;
    }
    if (tracked.get(id) !== entry) return; // deselected while the request was out
    if (error !== entry.error) {
      entry.error = error;
      renderLegend();
    }
    if (changed.size > 0) redraw(changed);
    if (more) entry.poller.now();
  }

  // Redraws the charts of `changedNames` (all when null), adding and removing charts as the
  // set of metric names changes.
  function redraw(changedNames = null) {
    if (selection.length === 0) {
      charts.arrange([]);
      replaceChildren(note, emptyNote('Pick jobs above to compare their metrics.'));
      return;
    }
    const names = metricNames();
    replaceChildren(note, names.length ? null : emptyNote('No metric samples yet.'));
    charts.arrange(names);
    for (const name of names) if (!changedNames || changedNames.has(name)) drawMetric(name);
  }

  function metricNames() {
    const names = new Set();
    for (const id of selection) for (const name of tracked.get(id)?.samples.names() ?? []) names.add(name);
    return [...names].sort();
  }

  function drawMetric(name) {
    const series = [];
    const columns = [];
    selection.forEach((id, index) => {
      const representative = tracked.get(id)?.samples.sources(name)[0];
      if (!representative) return;
      series.push({ label: displayName(id), color: colorAt(index) });
      columns.push(representative);
    });
    const { data, points } = alignColumns(columns);
    charts.chartFor(name).show(series, data, points, { 'data-series': series.length });
  }

  function renderLegend() {
    replaceChildren(legend, selection.map((id, index) => {
      const error = tracked.get(id)?.error;
      return el('li', { 'data-job': id },
        el('span', { class: 'swatch', style: `background:${colorAt(index)}` }),
        el('a', { href: `#/job/${encodeURIComponent(id)}` }, displayName(id)),
        error ? el('span', { class: 'error-text' }, ` (${error})`) : null);
    }));
  }

  function renderPicker() {
    if (jobList.length === 0) {
      replaceChildren(picker, emptyNote('No jobs yet.'));
      return;
    }
    replaceChildren(picker, jobList.map((job) => {
      const id = String(job.id);
      return el('label', { class: 'pick' },
        el('input', { type: 'checkbox', value: id, checked: selection.includes(id), onchange: onPick }),
        el('span', {}, job.name || id), statusBadge(job.status));
    }));
  }

  // Keeps the existing order (and so the colors) of jobs already selected; new ones go last.
  function onPick(event) {
    const id = event.target.value;
    const ids = event.target.checked ? [...selection, id] : selection.filter((s) => s !== id);
    window.location.hash = `#/compare?jobs=${ids.map(encodeURIComponent).join(',')}`;
  }

  async function refreshJobList() {
    try {
      const data = await getJson('api/jobs');
      const jobs = Array.isArray(data && data.jobs) ? data.jobs.filter((job) => job && job.id != null) : [];
      const sorted = sortNewestFirst(jobs);
      if (JSON.stringify(sorted.map(pickerFields)) === JSON.stringify(jobList.map(pickerFields))) return;
      jobList = sorted;
      renderPicker();
      renderLegend();
      redraw(); // job names replace ids in the series labels
    } catch (err) {
      if (jobList.length === 0) replaceChildren(picker, emptyNote(`Could not load the jobs: ${err.message}`));
    }
  }

  const jobListPoller = startPolling(refreshJobList, JOB_LIST_POLL_MS);
  select(jobsFromRoute(route));
  return {
    update(newRoute) {
      select(jobsFromRoute(newRoute));
    },
    unmount() {
      jobListPoller.stop();
      for (const entry of tracked.values()) entry.poller.stop();
      charts.destroy();
    },
  };
}

function pickerFields(job) {
  return [job.id, job.name, job.status];
}

function jobsFromRoute(route) {
  return (route.query.get('jobs') || '').split(',').map((id) => id.trim()).filter(Boolean);
}
