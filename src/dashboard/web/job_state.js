// What a job's status implies for the page: whether it still changes, and how long it ran.

// Jobs in these states still change: their durations tick and their data is polled fast.
const ACTIVE_JOB_STATES = new Set(['Starting', 'Running']);

export function isActiveStatus(status) {
  return ACTIVE_JOB_STATES.has(status);
}

// The server's duration_s is measured on its clock; for a running job it is extended by the
// time since the response arrived (`receivedAt`, Date.now() then) rather than recomputed from
// started_at, which would mix the server's clock with the browser's.
export function liveDuration(job, receivedAt) {
  const serverDuration = Number.isFinite(job.duration_s) ? job.duration_s : null;
  if (!isActiveStatus(job.status)) return serverDuration;
  if (serverDuration !== null) return serverDuration + (Date.now() - receivedAt) / 1000;
  if (Number.isFinite(job.started_at)) return Date.now() / 1000 - job.started_at;
  return null;
}

// Newest first; a job still starting (no start time yet) goes on top, an old record without
// one at the bottom.
export function sortNewestFirst(jobs) {
  const startOf = (job) => {
    if (Number.isFinite(job.started_at)) return job.started_at;
    return isActiveStatus(job.status) ? Infinity : -Infinity;
  };
  return jobs.slice().sort((a, b) => {
    const startA = startOf(a);
    const startB = startOf(b);
    if (startA === startB) return 0; // (subtracting would give NaN for two Infinities)
    return startA < startB ? 1 : -1;
  });
}
