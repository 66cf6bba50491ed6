// #/job/ID — one job: header, metric charts, hosts, artifacts and the log, all live. The job
// record is polled every second while the job runs (every 5 s after), and each part polls
// its own stream (metrics, log) from where it left off.

import { getJson, jobApiPath } from './api.js';
import { el, replaceChildren } from './dom.js';
import { artifactsSection } from './job_artifacts.js';
import { JobHeader } from './job_header.js';
import { hostsSection } from './job_hosts.js';
import { JobMetrics } from './job_metrics.js';
import { isActiveStatus } from './job_state.js';
import { LogView } from './log_view.js';
import { startPolling } from './poll.js';

const ACTIVE_POLL_MS = 1000;
const ENDED_POLL_MS = 5000;

export function mountJobPage(root, route) {
  const jobId = route.params[0];
  document.title = `${jobId} — dtrain dashboard`;
  let job = null;
  const rendered = { header: null, details: null }; // what each part last showed, as JSON
  const pollInterval = () => (job && !isActiveStatus(job.status) ? ENDED_POLL_MS : ACTIVE_POLL_MS);

  const message = el('div', { class: 'page-message' });
  const header = new JobHeader();
  const metrics = new JobMetrics(jobId, pollInterval);
  const details = el('div', { class: 'two-columns' });
  const log = new LogView(jobId);
  // Hidden until the job's record arrives, so an unknown id shows just the message.
  const content = el('div', { class: 'job-content', hidden: true },
    header.element, metrics.element, details, log.element);
  replaceChildren(root,
    el('nav', { class: 'breadcrumb' }, el('a', { href: '#/' }, 'Jobs'), ' / ', jobId),
    message, content);

  async function refresh() {
    try {
      const record = await getJson(jobApiPath(jobId));
      replaceChildren(message);
      job = { ...record, id: record.id ?? jobId };
      render(Date.now());
    } catch (err) {
      if (err.isNetwork) return;
      replaceChildren(message, err.isNotFound
        ? el('div', { class: 'card notice' },
          `No job “${jobId}” (yet). This page keeps checking; `, el('a', { href: '#/' }, 'see all jobs'), '.')
        : el('div', { class: 'error-note' }, `Could not load the job: ${err.message}`));
    }
  }

  // Each part is rebuilt only when its own fields changed: a running job's duration_s changes
  // every poll, and rebuilding the artifacts then would drop the user's text selection.
  function render(receivedAt) {
    document.title = `${job.name || jobId} — dtrain dashboard`;
    content.hidden = false;
    const headerKey = JSON.stringify({ ...job, duration_s: null, hosts: null, artifacts: null, log_hosts: null });
    if (headerKey !== rendered.header) {
      rendered.header = headerKey;
      header.render(job, receivedAt);
    } else {
      header.update(job, receivedAt);
    }
    const detailsKey = JSON.stringify([job.hosts, job.artifacts, job.tensorboard_dir, job.timelines]);
    if (detailsKey !== rendered.details) {
      rendered.details = detailsKey;
      replaceChildren(details, hostsSection(job.hosts), artifactsSection(job));
    }
    log.setHosts(job.log_hosts);
  }

  const poller = startPolling(refresh, pollInterval);
  const ticker = setInterval(() => header.tick(), 1000);
  return {
    unmount() {
      poller.stop();
      clearInterval(ticker);
      metrics.destroy();
      log.destroy();
    },
  };
}

