// A job's metric charts: polls /api/jobs/ID/metrics?from=N, appends what arrived and redraws
// only the charts whose metric got samples. One chart per metric name, one series per source
// (host, rank), or a single series named after the metric when one source printed it.

import { getJson, jobApiPath, streamHasMore, streamRestarted } from './api.js';
import { el, emptyNote, replaceChildren } from './dom.js';
import { ChartGrid } from './metric_chart.js';
import { alignColumns, MetricSamples, sourceLabel } from './metric_series.js';
import { colorAt } from './palette.js';
import { startPolling } from './poll.js';

export class JobMetrics {
  // `interval`: ms between polls, or a function giving it (slower once the job ended).
  constructor(jobId, interval) {
    this.jobId = jobId;
    this.samples = new MetricSamples();
    this.note = el('div', { class: 'metrics-note' }, emptyNote('Loading metrics…'));
    this.grid = el('div', { class: 'chart-grid' });
    this.charts = new ChartGrid(this.grid);
    this.element = el('section', { class: 'metrics' },
      el('h2', { class: 'section-title' }, 'Metrics'), this.note, this.grid);
    this.poller = startPolling(() => this.poll(), interval);
  }

  async poll() {
    let reply;
    const from = this.samples.next;
    try {
      reply = await getJson(jobApiPath(this.jobId, '/metrics'), { from });
    } catch (err) {
      if (this.samples.isEmpty && !err.isNetwork) {
        const text = err.isNotFound ? 'No metrics for this job.' : `Could not load metrics: ${err.message}`;
        replaceChildren(this.note, emptyNote(text));
      }
      return;
    }
    if (streamRestarted(from, reply)) this.startOver();
    const changed = this.samples.add(reply.samples);
    if (Number.isFinite(reply.next)) this.samples.next = reply.next;
    this.redraw(changed);
    if (streamHasMore(reply, changed.size ? reply.samples.length : 0)) this.poller.now();
  }

  startOver() {
    this.samples = new MetricSamples();
    this.charts.arrange([]);
  }

  redraw(changedNames) {
    if (this.samples.isEmpty) {
      replaceChildren(this.note, emptyNote('No metric samples yet.'));
      return;
    }
    replaceChildren(this.note);
    this.charts.arrange(this.samples.names());
    for (const name of changedNames) this.drawMetric(name);
  }

  drawMetric(name) {
    const sources = this.samples.sources(name);
    const single = sources.length === 1;
    const series = sources.map((source, i) => ({ label: single ? name : sourceLabel(source), color: colorAt(i) }));
    const { data, points } = alignColumns(sources);
    this.charts.chartFor(name).show(series, data, points, { 'data-series': sources.length });
  }

  destroy() {
    this.poller.stop();
    this.charts.destroy();
  }
}
