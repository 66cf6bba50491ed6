// Draws a TimelineData on a canvas: a time axis on top, track names in a left gutter, one
// lane per track with spans colored by activity. Wheel zooms around the cursor, dragging pans
// (time sideways, lanes up and down), double click shows everything again, and hovering shows
// what is under the cursor.
//
// Speed with 100,000+ spans comes from two rules: only spans overlapping the visible time
// range are visited (binary search per lane), and runs of spans narrower than a pixel are
// merged into one rectangle, so one frame fills at most about one rectangle per pixel column
// per lane. Rectangles are batched per color: one fill() per activity per frame.

import { el, replaceChildren } from './dom.js';
import { formatMicros } from './format.js';
import { lowerBound } from './timeline_data.js';

const GUTTER = 200; // px for track names
const AXIS = 28; // px for the time axis
const LANE = 20; // px per lane
const BAR = 14; // px height of a span inside its lane
const MAX_HEIGHT = 640;
const MIN_RANGE_US = 1;
const HIT_SLOP_PX = 3;
const INSTANT_TICK = 5; // px height of an instant's mark

export class TimelineView {
  // colors[i]: the color of activity i.
  constructor(canvas, tooltip, data, colors) {
    this.canvas = canvas;
    this.tooltip = tooltip;
    this.data = data;
    this.colors = colors;
    this.context = canvas.getContext('2d');
    this.width = 0;
    this.height = 0;
    this.scrollY = 0;
    this.drag = null;
    this.frameRequested = false;
    this.labelCache = new Map();
    this.batches = colors.map(() => []);
    this.resetView();
    this.listen();
    this.resizeObserver = new ResizeObserver(() => this.resize());
    this.resizeObserver.observe(canvas.parentElement);
    this.resize();
  }

  // Shows [start, end] (microseconds, the data's clock) across the plot, e.g. one step.
  showRange(start, end) {
    const pad = (end - start) * 0.02;
    this.viewStart = start - pad;
    this.viewEnd = Math.max(end + pad, this.viewStart + MIN_RANGE_US);
    this.hideTooltip();
    this.requestDraw();
  }

  resetView() {
    const pad = (this.data.end - this.data.start) * 0.01;
    this.viewStart = this.data.start - pad;
    this.viewEnd = this.data.end + pad;
    this.scrollY = 0;
    this.requestDraw();
  }

  // ---- geometry

  get plotWidth() {
    return Math.max(1, this.width - GUTTER);
  }

  get pxPerUs() {
    return this.plotWidth / (this.viewEnd - this.viewStart);
  }

  xOf(time) {
    return GUTTER + (time - this.viewStart) * this.pxPerUs;
  }

  timeAt(x) {
    return this.viewStart + (x - GUTTER) / this.pxPerUs;
  }

  laneAt(y) {
    if (y < AXIS) return -1;
    const index = Math.floor((y - AXIS + this.scrollY) / LANE);
    return index < this.data.lanes.length ? index : -1;
  }

  maxScrollY() {
    return Math.max(0, this.data.lanes.length * LANE - (this.height - AXIS));
  }

  resize() {
    const width = this.canvas.parentElement.clientWidth;
    const height = Math.min(MAX_HEIGHT, Math.max(120, AXIS + this.data.lanes.length * LANE + 4));
    if (width === this.width && height === this.height) return;
    const ratio = window.devicePixelRatio || 1;
    this.width = width;
    this.height = height;
    this.canvas.style.width = `${width}px`;
    this.canvas.style.height = `${height}px`;
    this.canvas.width = Math.round(width * ratio);
    this.canvas.height = Math.round(height * ratio);
    this.scrollY = Math.min(this.scrollY, this.maxScrollY());
    this.draw();
  }

  // ---- drawing

  requestDraw() {
    if (this.frameRequested) return;
    this.frameRequested = true;
    requestAnimationFrame(() => {
      this.frameRequested = false;
      this.draw();
    });
  }

  draw() {
    const began = performance.now();
    const ctx = this.context;
    const ratio = this.canvas.width / Math.max(1, this.width);
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    ctx.fillStyle = '#ffffff';
    ctx.fillRect(0, 0, this.width, this.height);
    const ticks = this.axisTicks();
    this.drawGrid(ticks);
    const firstLane = Math.floor(this.scrollY / LANE);
    const lastLane = Math.min(this.data.lanes.length - 1, Math.floor((this.scrollY + this.height - AXIS) / LANE));
    for (let index = firstLane; index <= lastLane; index++) this.collectLane(index);
    this.fillBatches();
    for (let index = firstLane; index <= lastLane; index++) this.drawInstants(index);
    this.drawGutter(firstLane, lastLane);
    this.drawAxis(ticks);
    // For tests and curious users: how long the last frame took to draw.
    this.canvas.dataset.drawMs = (performance.now() - began).toFixed(1);
  }

  laneTop(index) {
    return AXIS + index * LANE - this.scrollY;
  }

  // Queues the lane's visible spans as rectangles, merging sub-pixel neighbours. A merged
  // run takes the color of its longest span, so a zoomed-out view still shows which activity
  // dominates there.
  collectLane(index) {
    const lane = this.data.lanes[index];
    const y = this.laneTop(index) + (LANE - BAR) / 2;
    const first = lowerBound(lane.starts, this.viewStart - lane.maxDuration);
    const last = lowerBound(lane.starts, this.viewEnd);
    let run = null; // {x0, x1, activity, longest}
    const flush = () => {
      if (run) this.queueRect(run.activity, run.x0, Math.max(run.x1, run.x0 + 1), y);
      run = null;
    };
    for (let i = first; i < last; i++) {
      const start = lane.starts[i];
      const duration = lane.durations[i];
      if (start + duration < this.viewStart) continue;
      const x0 = Math.max(GUTTER, this.xOf(start));
      const x1 = Math.min(this.width, this.xOf(start + duration));
      const activity = lane.activities[i];
      if (x1 - x0 >= 1) {
        flush();
        this.queueRect(activity, x0, x1, y);
      } else if (run && x0 <= run.x1 + 1) {
        run.x1 = Math.max(run.x1, x1);
        if (duration > run.longest) Object.assign(run, { activity, longest: duration });
      } else {
        flush();
        run = { x0, x1, activity, longest: duration };
      }
    }
    flush();
  }

  queueRect(activity, x0, x1, y) {
    this.batches[activity].push(x0, y, x1 - x0);
  }

  fillBatches() {
    const ctx = this.context;
    let rects = 0;
    this.batches.forEach((batch, activity) => {
      if (batch.length === 0) return;
      ctx.fillStyle = this.colors[activity];
      ctx.beginPath();
      for (let i = 0; i < batch.length; i += 3) ctx.rect(batch[i], batch[i + 1], batch[i + 2], BAR);
      ctx.fill();
      rects += batch.length / 3;
      batch.length = 0;
    });
    this.canvas.dataset.drawnRects = String(rects);
  }

  // Instants as short dark ticks above the spans (not across them, so a lane full of
  // "rank N ready" marks still shows its colors), at most one per pixel column.
  drawInstants(index) {
    const lane = this.data.lanes[index];
    if (lane.instants.length === 0) return;
    const ctx = this.context;
    const top = this.laneTop(index) + 1;
    ctx.fillStyle = '#111827';
    let lastX = -1;
    for (const instant of lane.instants) {
      if (instant.time < this.viewStart || instant.time > this.viewEnd) continue;
      const x = Math.round(this.xOf(instant.time));
      if (x === lastX) continue;
      lastX = x;
      ctx.fillRect(x, top, 1, INSTANT_TICK);
    }
  }

  drawGutter(firstLane, lastLane) {
    const ctx = this.context;
    ctx.fillStyle = '#f8f9fb';
    ctx.fillRect(0, AXIS, GUTTER, this.height - AXIS);
    ctx.fillStyle = '#d9dde3';
    ctx.fillRect(GUTTER - 1, 0, 1, this.height);
    ctx.font = '12px system-ui, sans-serif';
    ctx.textBaseline = 'middle';
    ctx.fillStyle = '#374151';
    for (let index = firstLane; index <= lastLane; index++) {
      const y = this.laneTop(index) + LANE / 2;
      if (y < AXIS) continue;
      ctx.fillText(this.fittedLabel(this.data.lanes[index].name), 8, y);
    }
  }

  // The track name cut with an ellipsis to fit the gutter; measured once per name.
  fittedLabel(name) {
    let label = this.labelCache.get(name);
    if (label !== undefined) return label;
    const maxWidth = GUTTER - 16;
    label = name;
    if (this.context.measureText(label).width > maxWidth) {
      while (label.length > 1 && this.context.measureText(`${label}…`).width > maxWidth) label = label.slice(0, -1);
      label = `${label}…`;
    }
    this.labelCache.set(name, label);
    return label;
  }

  // Tick times at a round step (1, 2 or 5 × 10^k µs) about every 120 px.
  axisTicks() {
    const range = this.viewEnd - this.viewStart;
    const rough = range / Math.max(1, this.plotWidth / 120);
    const power = 10 ** Math.floor(Math.log10(rough));
    const step = [1, 2, 5, 10].map((m) => m * power).find((s) => s >= rough);
    // Ticks are times since the trace's start, so the labels read 0, 200 ms, 400 ms...
    const ticks = [];
    const first = Math.ceil((this.viewStart - this.data.start) / step) * step;
    for (let t = first; t + this.data.start <= this.viewEnd; t += step) ticks.push(t);
    return ticks;
  }

  drawGrid(ticks) {
    const ctx = this.context;
    ctx.fillStyle = '#f1f3f6';
    for (let index = Math.floor(this.scrollY / LANE); index < this.data.lanes.length; index += 1) {
      const top = this.laneTop(index);
      if (top > this.height) break;
      if (index % 2 === 1) ctx.fillRect(GUTTER, top, this.plotWidth, LANE);
    }
    ctx.fillStyle = '#e5e8ec';
    for (const t of ticks) ctx.fillRect(Math.round(this.xOf(t + this.data.start)), AXIS, 1, this.height - AXIS);
  }

  drawAxis(ticks) {
    const ctx = this.context;
    ctx.fillStyle = '#ffffff';
    ctx.fillRect(0, 0, this.width, AXIS);
    ctx.fillStyle = '#d9dde3';
    ctx.fillRect(0, AXIS - 1, this.width, 1);
    ctx.font = '11px system-ui, sans-serif';
    ctx.textBaseline = 'middle';
    ctx.fillStyle = '#5b6472';
    ctx.fillText('time since trace start', 8, AXIS / 2);
    for (const t of ticks) {
      const x = this.xOf(t + this.data.start);
      if (x < GUTTER) continue;
      ctx.fillRect(Math.round(x), AXIS - 6, 1, 5);
      const label = formatMicros(t);
      if (x + 3 + ctx.measureText(label).width <= this.width) ctx.fillText(label, x + 3, AXIS / 2 - 2);
    }
  }

  // ---- interaction

  listen() {
    const canvas = this.canvas;
    canvas.addEventListener('wheel', (e) => this.onWheel(e), { passive: false });
    canvas.addEventListener('mousedown', (e) => this.onMouseDown(e));
    canvas.addEventListener('mousemove', (e) => { if (!this.drag) this.showTooltip(e); });
    canvas.addEventListener('mouseleave', () => this.hideTooltip());
    canvas.addEventListener('dblclick', () => this.resetView());
    this.onWindowMove = (e) => this.onDrag(e);
    this.onWindowUp = () => this.endDrag();
    window.addEventListener('mousemove', this.onWindowMove);
    window.addEventListener('mouseup', this.onWindowUp);
  }

  destroy() {
    this.resizeObserver.disconnect();
    window.removeEventListener('mousemove', this.onWindowMove);
    window.removeEventListener('mouseup', this.onWindowUp);
  }

  // Wheel zooms around the time under the cursor; Shift+wheel scrolls the lanes; a
  // trackpad's sideways swipe pans.
  onWheel(event) {
    event.preventDefault();
    const scale = event.deltaMode === 1 ? 16 : event.deltaMode === 2 ? 400 : 1;
    if (event.shiftKey) {
      this.scrollBy(event.deltaY * scale);
    } else if (Math.abs(event.deltaX) > Math.abs(event.deltaY)) {
      this.panBy(event.deltaX * scale / this.pxPerUs);
    } else {
      this.zoomAround(this.timeAt(this.offsetX(event)), Math.exp(event.deltaY * scale * 0.0015));
    }
    this.hideTooltip();
    this.requestDraw();
  }

  zoomAround(time, factor) {
    const fullRange = (this.data.end - this.data.start) * 1.2;
    const range = this.viewEnd - this.viewStart;
    const newRange = Math.min(fullRange, Math.max(MIN_RANGE_US, range * factor));
    this.viewStart = time - (time - this.viewStart) * (newRange / range);
    this.viewEnd = this.viewStart + newRange;
    this.keepDataInView();
  }

  panBy(deltaUs) {
    this.viewStart += deltaUs;
    this.viewEnd += deltaUs;
    this.keepDataInView();
  }

  scrollBy(deltaPx) {
    this.scrollY = Math.min(this.maxScrollY(), Math.max(0, this.scrollY + deltaPx));
  }

  // Panning stops with at least a tenth of the view still over the data.
  keepDataInView() {
    const range = this.viewEnd - this.viewStart;
    const lowest = this.data.start - range * 0.9;
    const highest = this.data.end - range * 0.1;
    const shift = Math.max(lowest - this.viewStart, 0) + Math.min(highest - this.viewStart, 0);
    this.viewStart += shift;
    this.viewEnd += shift;
  }

  onMouseDown(event) {
    if (event.button !== 0) return;
    event.preventDefault();
    this.drag = { x: event.clientX, y: event.clientY, viewStart: this.viewStart, scrollY: this.scrollY };
    this.canvas.classList.add('dragging');
    this.hideTooltip();
  }

  onDrag(event) {
    if (!this.drag) return;
    const range = this.viewEnd - this.viewStart;
    this.viewStart = this.drag.viewStart - (event.clientX - this.drag.x) / this.pxPerUs;
    this.viewEnd = this.viewStart + range;
    this.keepDataInView();
    this.scrollY = this.drag.scrollY;
    this.scrollBy(this.drag.y - event.clientY);
    this.requestDraw();
  }

  endDrag() {
    if (!this.drag) return;
    this.drag = null;
    this.canvas.classList.remove('dragging');
  }

  offsetX(event) {
    return event.clientX - this.canvas.getBoundingClientRect().left;
  }

  // ---- hover

  // The span under (x, y): among those covering the time (give or take a few pixels), the
  // shortest, which is the innermost when spans nest. Else an instant near the cursor.
  hitTest(x, y) {
    const laneIndex = this.laneAt(y);
    if (laneIndex < 0 || x < GUTTER) return null;
    const lane = this.data.lanes[laneIndex];
    const time = this.timeAt(x);
    const slop = HIT_SLOP_PX / this.pxPerUs;
    const instant = lane.instants.find((i) => Math.abs(i.time - time) <= slop);
    if (instant) return { lane, instant };
    let best = -1;
    const last = lowerBound(lane.starts, time + slop);
    for (let i = lowerBound(lane.starts, time - slop - lane.maxDuration); i < last; i++) {
      const end = lane.starts[i] + lane.durations[i];
      if (end + slop < time) continue;
      if (best < 0 || lane.durations[i] < lane.durations[best]) best = i;
    }
    return best < 0 ? null : { lane, span: best };
  }

  showTooltip(event) {
    const rect = this.canvas.getBoundingClientRect();
    const x = event.clientX - rect.left;
    const y = event.clientY - rect.top;
    const hit = this.hitTest(x, y);
    if (!hit) {
      this.hideTooltip();
      return;
    }
    replaceChildren(this.tooltip, ...this.describe(hit));
    this.tooltip.hidden = false;
    // Keep the box inside the canvas: flip to the cursor's left near the right edge.
    const box = this.tooltip.getBoundingClientRect();
    const left = x + 14 + box.width > this.width ? x - 14 - box.width : x + 14;
    this.tooltip.style.left = `${Math.max(0, left)}px`;
    this.tooltip.style.top = `${y + 14}px`;
  }

  describe(hit) {
    const { lane } = hit;
    const start = this.data.start;
    if (hit.instant) {
      return [
        row('Track', lane.name),
        row('Instant', hit.instant.name),
        row('At', formatMicros(hit.instant.time - start)),
      ];
    }
    const i = hit.span;
    const activity = lane.activities[i];
    const swatch = el('span', { class: 'swatch', style: `background:${this.colors[activity]}` });
    return [
      row('Track', lane.name),
      row('Activity', el('span', {}, swatch, this.data.activities[activity])),
      row('Start', formatMicros(lane.starts[i] - start)),
      row('Duration', formatMicros(lane.durations[i])),
    ];
  }

  hideTooltip() {
    this.tooltip.hidden = true;
  }
}

function row(label, value) {
  return el('div', { class: 'tooltip-row' }, el('span', { class: 'tooltip-label' }, label), value);
}
