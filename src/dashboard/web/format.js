// Turns numbers, times and sizes into display text. Every function accepts null or undefined
// (a job record still being written has holes) and returns a placeholder rather than throwing.

export const MISSING = '—';

const pad2 = (n) => String(n).padStart(2, '0');

// "45s", "3m 07s", "2h 05m 00s": whole seconds, since durations tick once a second.
export function formatDuration(seconds) {
  if (!Number.isFinite(seconds) || seconds < 0) return MISSING;
  const total = Math.floor(seconds);
  const hours = Math.floor(total / 3600);
  const minutes = Math.floor((total % 3600) / 60);
  const secs = total % 60;
  if (hours > 0) return `${hours}h ${pad2(minutes)}m ${pad2(secs)}s`;
  if (minutes > 0) return `${minutes}m ${pad2(secs)}s`;
  return `${secs}s`;
}

// Unix seconds as "2024-05-01 14:03:22" in the browser's time zone: sortable and unambiguous,
// unlike toLocaleString, whose day/month order depends on the locale.
export function formatLocalTime(unixSeconds) {
  if (!Number.isFinite(unixSeconds)) return MISSING;
  const d = new Date(unixSeconds * 1000);
  const date = `${d.getFullYear()}-${pad2(d.getMonth() + 1)}-${pad2(d.getDate())}`;
  return `${date} ${pad2(d.getHours())}:${pad2(d.getMinutes())}:${pad2(d.getSeconds())}`;
}

// Metric values range from losses like 0.000123 to sample counts like 60000; four significant
// digits is enough to compare runs without a wall of decimals.
export function formatMetricValue(value) {
  if (value === null || value === undefined) return MISSING;
  if (!Number.isFinite(value)) return String(value);
  if (Number.isInteger(value) && Math.abs(value) < 1e9) return String(value);
  const magnitude = Math.abs(value);
  if (magnitude !== 0 && (magnitude < 1e-3 || magnitude >= 1e6)) return value.toExponential(3);
  return String(Number(value.toPrecision(4)));
}

export function formatBytes(bytes) {
  if (!Number.isFinite(bytes) || bytes < 0) return MISSING;
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return unit === 0 ? `${value} B` : `${value.toFixed(value < 10 ? 1 : 0)} ${units[unit]}`;
}

// Timeline times arrive in microseconds; pick the unit that keeps 1-3 digits before the point.
export function formatMicros(us) {
  if (!Number.isFinite(us)) return MISSING;
  const magnitude = Math.abs(us);
  if (magnitude < 1000) return `${trimNumber(us)} µs`;
  if (magnitude < 1e6) return `${trimNumber(us / 1000)} ms`;
  return `${trimNumber(us / 1e6)} s`;
}

function trimNumber(x) {
  return String(Number(x.toPrecision(3)));
}

export function formatSeconds(seconds) {
  if (!Number.isFinite(seconds)) return MISSING;
  return `${trimNumber(seconds)} s`;
}

// "2 × 1": hosts times processes per host, either side possibly unknown yet.
export function formatShape(hosts, processesPerHost) {
  if (hosts == null && processesPerHost == null) return MISSING;
  return `${hosts ?? '?'} × ${processesPerHost ?? '?'}`;
}

const SIGNAL_NAMES = {
  1: 'SIGHUP', 2: 'SIGINT', 6: 'SIGABRT', 9: 'SIGKILL', 11: 'SIGSEGV', 13: 'SIGPIPE', 15: 'SIGTERM',
};

// How a process ended: "exit 0", "exit 3", "signal 9 (SIGKILL)", or "—" while it runs.
export function formatExit(exitCode, signal) {
  if (Number.isInteger(signal)) {
    const name = SIGNAL_NAMES[signal];
    return name ? `signal ${signal} (${name})` : `signal ${signal}`;
  }
  if (Number.isInteger(exitCode)) return `exit ${exitCode}`;
  return MISSING;
}
