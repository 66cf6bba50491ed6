// The timeline from /api/jobs/ID/timeline reshaped for drawing: spans split into one lane per
// track, each lane's spans sorted by start in typed arrays, so that drawing and hovering can
// binary-search the visible part instead of walking 100,000 spans.

export class TimelineData {
  constructor(reply) {
    this.tracks = stringList(reply.tracks);
    this.activities = stringList(reply.activities);
    this.truncated = Boolean(reply.truncated);
    const spans = (Array.isArray(reply.spans) ? reply.spans : []).filter(this.isValidSpan, this);
    this.spanCount = spans.length;
    this.lanes = this.tracks.map((name) => ({
      name, starts: null, durations: null, activities: null, maxDuration: 0, instants: [],
    }));
    this.fillLanes(spans);
    this.addInstants(Array.isArray(reply.instants) ? reply.instants : []);
    this.computeRange(spans);
    // A track with nothing on it would only be an empty row.
    this.lanes = this.lanes.filter((lane) => lane.starts.length > 0 || lane.instants.length > 0);
  }

  // [track_index, activity_index, start_us, dur_us], indices in range, times finite.
  isValidSpan(span) {
    return Array.isArray(span) && span.length >= 4
      && Number.isInteger(span[0]) && span[0] >= 0 && span[0] < this.tracks.length
      && Number.isInteger(span[1]) && span[1] >= 0 && span[1] < this.activities.length
      && Number.isFinite(span[2]) && Number.isFinite(span[3]) && span[3] >= 0;
  }

  fillLanes(spans) {
    const perLane = this.lanes.map(() => []);
    for (const span of spans) perLane[span[0]].push(span);
    perLane.forEach((laneSpans, index) => {
      laneSpans.sort((a, b) => a[2] - b[2]);
      const lane = this.lanes[index];
      lane.starts = Float64Array.from(laneSpans, (s) => s[2]);
      lane.durations = Float64Array.from(laneSpans, (s) => s[3]);
      lane.activities = Uint16Array.from(laneSpans, (s) => s[1]);
      lane.maxDuration = laneSpans.reduce((max, s) => Math.max(max, s[3]), 0);
    });
  }

  // [track_index, name, ts_us]; kept sorted by time per lane.
  addInstants(instants) {
    for (const instant of instants) {
      if (!Array.isArray(instant) || !Number.isInteger(instant[0]) || !Number.isFinite(instant[2])) continue;
      const lane = this.lanes[instant[0]];
      if (lane) lane.instants.push({ time: instant[2], name: String(instant[1] ?? '') });
    }
    for (const lane of this.lanes) lane.instants.sort((a, b) => a.time - b.time);
  }

  computeRange(spans) {
    let start = Infinity;
    let end = -Infinity;
    for (const span of spans) {
      start = Math.min(start, span[2]);
      end = Math.max(end, span[2] + span[3]);
    }
    for (const lane of this.lanes) {
      for (const instant of lane.instants) {
        start = Math.min(start, instant.time);
        end = Math.max(end, instant.time);
      }
    }
    this.start = Number.isFinite(start) ? start : 0;
    this.end = Number.isFinite(end) && end > this.start ? end : this.start + 1000;
  }

  // Training steps, found as the runtime's autotuner finds them: by the recurrence of one
  // tensor's negotiation. The tensor negotiated most often (the earliest first, on a tie)
  // comes once per step, so its negotiations' starts cut the timeline into steps:
  // [{start, end}] in microseconds, empty when no tensor was negotiated twice.
  steps() {
    let marker = null;
    for (const lane of this.lanes) {
      const starts = [];
      for (let i = 0; i < lane.starts.length; i++) {
        if (this.activities[lane.activities[i]].startsWith('NEGOTIATE')) starts.push(lane.starts[i]);
      }
      const better = !marker || starts.length > marker.length ||
        (starts.length === marker.length && starts.length > 0 && starts[0] < marker[0]);
      if (starts.length >= 2 && better) marker = starts;
    }
    if (!marker) return [];
    return marker.map((start, i) => ({ start, end: i + 1 < marker.length ? marker[i + 1] : this.end }));
  }

  // Per activity: how many spans, total and mean microseconds, and the share of all span time;
  // with a window {start, end}, of the spans that begin inside it (one step's breakdown).
  activitySummary(window = null) {
    const rows = this.activities.map((name, index) => ({ index, name, count: 0, total: 0, max: 0 }));
    for (const lane of this.lanes) {
      const first = window ? lowerBound(lane.starts, window.start) : 0;
      const last = window ? lowerBound(lane.starts, window.end) : lane.starts.length;
      for (let i = first; i < last; i++) {
        const row = rows[lane.activities[i]];
        row.count += 1;
        row.total += lane.durations[i];
        row.max = Math.max(row.max, lane.durations[i]);
      }
    }
    const grandTotal = rows.reduce((sum, row) => sum + row.total, 0);
    return rows
      .filter((row) => row.count > 0)
      .map((row) => ({ ...row, mean: row.total / row.count, share: grandTotal ? row.total / grandTotal : 0 }))
      .sort((a, b) => b.total - a.total);
  }
}

function stringList(value) {
  return Array.isArray(value) ? value.map((v) => String(v ?? '')) : [];
}

// The index of the first element of sorted `array` that is >= `value`.
export function lowerBound(array, value) {
  let low = 0;
  let high = array.length;
  while (low < high) {
    const mid = (low + high) >> 1;
    if (array[mid] < value) low = mid + 1;
    else high = mid;
  }
  return low;
}
