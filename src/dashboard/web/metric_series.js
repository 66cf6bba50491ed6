// Metric samples as they stream in from /api/jobs/ID/metrics, grouped by metric name and by
// source (the host and rank that printed them), and turned into the column layout uPlot draws.

export class MetricSamples {
  constructor() {
    this.byMetric = new Map(); // name -> Map(sourceKey -> {host, rank, times[], values[]})
    this.next = 0; // the `from` of the next request
  }

  // Adds a batch of samples; returns the names of the metrics that changed. Malformed samples
  // (a half-written line) are skipped rather than poisoning the chart.
  add(samples) {
    const changed = new Set();
    for (const sample of Array.isArray(samples) ? samples : []) {
      if (!isUsableSample(sample)) continue;
      const source = this.sourceFor(sample);
      insertInTimeOrder(source, sample.time, sample.value);
      changed.add(sample.name);
    }
    return changed;
  }

  sourceFor(sample) {
    let sources = this.byMetric.get(sample.name);
    if (!sources) {
      sources = new Map();
      this.byMetric.set(sample.name, sources);
    }
    const host = typeof sample.host === 'string' ? sample.host : '';
    const rank = Number.isInteger(sample.rank) ? sample.rank : null;
    const key = `${host}\u0000${rank}`;
    let source = sources.get(key);
    if (!source) {
      source = { host, rank, times: [], values: [] };
      sources.set(key, source);
    }
    return source;
  }

  get isEmpty() {
    return this.byMetric.size === 0;
  }

  names() {
    return [...this.byMetric.keys()].sort();
  }

  // The sources of one metric in a stable order: by rank (none last), then host.
  sources(name) {
    const sources = [...(this.byMetric.get(name)?.values() ?? [])];
    return sources.sort(compareSources);
  }
}

function isUsableSample(sample) {
  return sample && typeof sample.name === 'string' && sample.name !== ''
    && Number.isFinite(sample.time) && Number.isFinite(sample.value);
}

// Samples normally arrive in time order; one that does not (two hosts' logs merged) is put
// in place, since uPlot needs ascending x.
function insertInTimeOrder(source, time, value) {
  const { times, values } = source;
  if (times.length === 0 || time >= times[times.length - 1]) {
    times.push(time);
    values.push(value);
    return;
  }
  let low = 0;
  let high = times.length;
  while (low < high) {
    const mid = (low + high) >> 1;
    if (times[mid] <= time) low = mid + 1;
    else high = mid;
  }
  times.splice(low, 0, time);
  values.splice(low, 0, value);
}

function compareSources(a, b) {
  const rankA = a.rank ?? Infinity;
  const rankB = b.rank ?? Infinity;
  if (rankA !== rankB) return rankA - rankB;
  return a.host.localeCompare(b.host, undefined, { numeric: true });
}

export function sourceLabel(source) {
  const host = source.host || 'unknown host';
  return source.rank === null ? host : `${host} · rank ${source.rank}`;
}

// uPlot wants one shared x array and one y array per series, with null where a series has no
// sample at that x. Sources sample at different moments, so the x array merges all their
// times. Equal times are NOT merged into one row: the server may stamp several lines read
// in one go with the same time, and every sample must stay a plotted point (data-points
// promises as much), so each sample gets a row of its own, nulls elsewhere.
// Returns {data: [xs, ys1, ys2, ...], points: the number of samples}.
export function alignColumns(columns) {
  const points = columns.reduce((sum, column) => sum + column.times.length, 0);
  if (columns.length === 1) return { data: [columns[0].times.slice(), columns[0].values.slice()], points };
  const order = mergeOrder(columns);
  const xs = new Array(order.length);
  const ys = columns.map(() => new Array(order.length).fill(null));
  order.forEach(([columnIndex, sampleIndex], row) => {
    xs[row] = columns[columnIndex].times[sampleIndex];
    ys[columnIndex][row] = columns[columnIndex].values[sampleIndex];
  });
  return { data: [xs, ...ys], points };
}

// [column, index] of every sample, by time (each column is already sorted by time).
function mergeOrder(columns) {
  const order = [];
  columns.forEach((column, c) => column.times.forEach((_, i) => order.push([c, i])));
  const timeOf = ([c, i]) => columns[c].times[i];
  return order.sort((a, b) => timeOf(a) - timeOf(b) || a[0] - b[0] || a[1] - b[1]);
}
