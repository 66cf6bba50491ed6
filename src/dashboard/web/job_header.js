// The top of a job's page: name, status, failure reason, shape, times and final metrics.
// Rebuilt when the job record changes; the duration of a running job ticks in between.

import { el, replaceChildren, setText } from './dom.js';
import { formatDuration, formatLocalTime, formatMetricValue, formatShape, MISSING } from './format.js';
import { isActiveStatus, liveDuration } from './job_state.js';
import { statusBadge } from './status_badge.js';

export class JobHeader {
  constructor() {
    this.element = el('section', { class: 'card job-header' });
    this.duration = null;
    this.job = null;
    this.receivedAt = 0;
  }

  render(job, receivedAt) {
    this.job = job;
    this.receivedAt = receivedAt;
    this.duration = el('dd', { class: 'duration' });
    this.tick();
    const reason = job.failure_reason
      ? el('div', { class: 'failure-reason' }, el('strong', {}, 'Failure: '), job.failure_reason)
      : null;
    replaceChildren(this.element,
      el('div', { class: 'job-title' },
        el('h1', {}, job.name || job.id),
        el('span', { id: 'job-status', class: 'status' }, statusBadge(job.status))),
      reason,
      el('dl', { class: 'facts' },
        fact('Job id', job.id),
        fact('Hosts × processes', formatShape(job.instance_count, job.processes_per_host)),
        fact('Engine', job.engine || MISSING),
        fact('Backend', job.backend || MISSING),
        fact('Started', formatLocalTime(job.started_at)),
        el('div', { class: 'fact' }, el('dt', {}, 'Duration'), this.duration),
        fact('Directory', job.dir || MISSING, 'path')),
      finalMetrics(job.final_metrics, isActiveStatus(job.status)));
  }

  // A newer record whose shown fields are unchanged: only the duration's base moves.
  update(job, receivedAt) {
    this.job = job;
    this.receivedAt = receivedAt;
    this.tick();
  }

  tick() {
    if (this.job && this.duration) setText(this.duration, formatDuration(liveDuration(this.job, this.receivedAt)));
  }
}

function fact(label, value, valueClass) {
  return el('div', { class: 'fact' }, el('dt', {}, label), el('dd', { class: valueClass }, value));
}

// <div id="final-metrics" data-count="N"> with one chip per metric (data-metric="NAME").
function finalMetrics(metrics, active) {
  const entries = Object.entries(metrics && typeof metrics === 'object' ? metrics : {});
  const chips = entries.map(([name, value]) =>
    el('span', { class: 'metric-chip large', 'data-metric': name },
      el('span', { class: 'metric-name' }, name), ' = ', el('strong', {}, formatMetricValue(value))));
  return el('div', { id: 'final-metrics', class: 'final-metrics', 'data-count': entries.length },
    // A running job's values are the latest each metric printed, not final yet.
    el('span', { class: 'final-metrics-label' }, active ? 'Latest metrics' : 'Final metrics'),
    chips.length ? chips : el('span', { class: 'muted' }, active ? 'none yet' : 'none'));
}
