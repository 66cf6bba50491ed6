#!/usr/bin/env node
// Drives the dashboard in Debian's Chromium (through playwright-core) for the dashboard's
// GoogleTest, which starts a dtrain server and a job and then runs, e.g.:
//
//   node browser_check.cjs live-job --url http://127.0.0.1:PORT --job ID --gate FILE --screenshots DIR
//   node browser_check.cjs compare  --url URL --jobs A,B --metric train:loss --screenshots DIR
//   node browser_check.cjs timeline --url URL --job ID --file timeline.json --screenshots DIR
//   node browser_check.cjs job-page --url URL --job ID --metric train:total_loss [--name F.png] --screenshots DIR
//   node browser_check.cjs precision-recall --url URL --job ID --file report/bbox_pr.json --screenshots DIR
//   node browser_check.cjs request  --url URL
//
// Options: --timeout S (the whole scenario's deadline, default 120). playwright-core is
// loaded from the directory in $DTRAIN_NPM_MODULES.
//
// Contract with the caller: the last stdout line is one JSON object of observations. Exit 0:
// the scenario ran (the C++ side judges the observations). Exit 1: something could not be
// observed in time; a one-line reason goes to stderr (and the observations gathered so far,
// with "error", still go to stdout, plus a failure-<scenario>.png screenshot when possible).
// Exit 2: the scenario could not run at all (bad arguments, playwright-core or Chromium
// missing), which a test may treat as "skip" rather than "fail".

'use strict';

const fs = require('fs');
const path = require('path');

const VIEWPORT = { width: 1400, height: 900 };
const CHROMIUM = '/usr/bin/chromium';

// Something expected was not observed: exit 1.
class CheckFailure extends Error {}
// Nothing could be tried: exit 2.
class SetupFailure extends Error {}

function parseArgs(argv) {
  const [scenario, ...rest] = argv;
  const options = { scenario, timeout: 120 };
  for (let i = 0; i < rest.length; i++) {
    const match = /^--([\w-]+)$/.exec(rest[i]);
    if (!match || i + 1 >= rest.length) throw new SetupFailure(`bad argument: ${rest[i]}`);
    options[match[1]] = rest[++i];
  }
  const known = SCENARIOS[scenario];
  if (!known) throw new SetupFailure(`unknown scenario '${scenario}'; one of: ${Object.keys(SCENARIOS).join(', ')}`);
  for (const name of ['url', ...known.needs]) if (!options[name]) throw new SetupFailure(`${scenario} needs --${name}`);
  options.timeout = Number(options.timeout);
  if (!(options.timeout > 0)) throw new SetupFailure('--timeout must be a positive number of seconds');
  return options;
}

// The URL of a dashboard route: keeps the server URL's query (a ?token=) and sets the hash.
function routeUrl(base, hashRoute) {
  const url = new URL(base);
  url.hash = hashRoute;
  return url.toString();
}

// CSS attribute selector for an arbitrary value (job ids, metric names with ':').
const attr = (name, value) => `[${name}=${JSON.stringify(String(value))}]`;

// Every wait takes what is left of the scenario's single deadline.
class Deadline {
  constructor(seconds) {
    this.end = Date.now() + seconds * 1000;
  }

  remainingMs() {
    return Math.max(1, this.end - Date.now());
  }
}

// Waits until `predicate(arg)` (run in the page) is truthy; its value is returned. `what`
// names the thing awaited for the failure message.
async function waitFor(page, deadline, what, predicate, arg) {
  try {
    const handle = await page.waitForFunction(predicate, arg, { timeout: deadline.remainingMs(), polling: 200 });
    return await handle.jsonValue();
  } catch (err) {
    if (!/Timeout/i.test(err.message)) throw err;
    const shown = await page.evaluate(visibleProblems).catch(() => '');
    throw new CheckFailure(`timed out waiting for ${what}${shown ? ` (the page says: ${shown})` : ''}`);
  }
}

// The dashboard's error notes and banner, to explain a wait that timed out.
function visibleProblems() {
  const notes = [...document.querySelectorAll('.error-note, .notice, #banner:not([hidden])')];
  return notes.map((note) => note.textContent.trim().replace(/\s+/g, ' ')).filter(Boolean).join(' | ');
}

async function screenshot(page, options, name) {
  if (!options.screenshots) return;
  fs.mkdirSync(options.screenshots, { recursive: true });
  await page.screenshot({ path: path.join(options.screenshots, name), fullPage: true });
}

// ---- in-page predicates and probes: serialized into the page, so each is self-contained

function rowHasStatus({ job, status }) {
  const row = [...document.querySelectorAll('tr[data-job]')].find((tr) => tr.dataset.job === job);
  const cell = row && row.querySelector('.status');
  return Boolean(cell) && cell.textContent.trim() === status;
}

function liveJobPageReady() {
  const chart = [...document.querySelectorAll('.chart[data-metric]')].find((c) => c.dataset.metric === 'train:loss');
  const hosts = new Set([...document.querySelectorAll('#log .log-line')].map((line) => line.dataset.host));
  return Boolean(chart) && Number(chart.dataset.points) > 0 && hosts.size >= 2;
}

function finishedJobPageReady() {
  const finals = document.querySelector('#final-metrics');
  const chart = [...document.querySelectorAll('.chart[data-metric]')].find((c) => c.dataset.metric === 'train:loss');
  return Boolean(finals) && Number(finals.dataset.count) > 0 && Boolean(chart) && Number(chart.dataset.points) > 0;
}

function chartHasPoints(metric) {
  const chart = [...document.querySelectorAll('.chart[data-metric]')].find((c) => c.dataset.metric === metric);
  return Boolean(chart) && Number(chart.dataset.points) > 0;
}

function chartHasSeries({ metric, count }) {
  const chart = [...document.querySelectorAll('.chart[data-metric]')].find((c) => c.dataset.metric === metric);
  return Boolean(chart) && Number(chart.dataset.series) === count;
}

// The number of spans on the timeline canvas once there are any.
function timelineSpans() {
  const canvas = document.querySelector('canvas#timeline');
  const spans = canvas ? Number(canvas.dataset.spans) : 0;
  return spans > 0 ? spans : false;
}

function chartInfo(metric) {
  const chart = [...document.querySelectorAll('.chart[data-metric]')].find((c) => c.dataset.metric === metric);
  if (!chart) return null;
  return { points: Number(chart.dataset.points || 0), series: Number(chart.dataset.series || 0) };
}

function pageState() {
  return {
    marker: window.__dtrainMarker === 1,
    charts: [...document.querySelectorAll('.chart[data-metric]')].map((c) => c.dataset.metric),
    logHosts: [...new Set([...document.querySelectorAll('#log .log-line')].map((line) => line.dataset.host))],
    // The hosts table's ranks: "rank:state" (the state badge's text).
    ranks: [...document.querySelectorAll('li[data-rank]')].map((li) => `${li.dataset.rank}:${li.querySelector('.badge')?.textContent ?? ''}`),
  };
}

function nextTwoFrames() {
  return new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve)));
}

// ---- scenarios

async function liveJob(page, options, deadline, seen) {
  const job = options.job;
  const jobLink = `tr${attr('data-job', job)} a.job-link`;
  await page.goto(routeUrl(options.url, '/'), { timeout: deadline.remainingMs() });
  await page.evaluate(() => { window.__dtrainMarker = 1; });

  await waitFor(page, deadline, `job ${job} to show Running`, rowHasStatus, { job, status: 'Running' });
  seen.sawRunning = true;

  await page.click(jobLink, { timeout: deadline.remainingMs() });
  await waitFor(page, deadline, 'train:loss points and log lines from 2 hosts on the job page', liveJobPageReady);
  const running = await page.evaluate(pageState);
  seen.logHosts = running.logHosts;
  seen.ranksWhileRunning = running.ranks;
  await screenshot(page, options, 'job-running.png');

  fs.writeFileSync(options.gate, 'go\n');
  await page.click('[data-nav="jobs"]', { timeout: deadline.remainingMs() });
  await waitFor(page, deadline, `job ${job} to show Completed`, rowHasStatus, { job, status: 'Completed' });
  seen.sawCompleted = true;
  await screenshot(page, options, 'jobs.png');

  await page.click(jobLink, { timeout: deadline.remainingMs() });
  await waitFor(page, deadline, "the final metrics and the train:loss chart on the finished job's page",
    finishedJobPageReady);
  // The log is fetched from its tail again on this visit: give it a moment to show in the
  // screenshot, without failing if the job wrote no log lines after all.
  await page.waitForFunction(() => document.querySelectorAll('#log .log-line').length > 0, null,
    { timeout: Math.min(5000, deadline.remainingMs()) }).catch(() => {});
  await screenshot(page, options, 'job.png');

  const finished = await page.evaluate(pageState);
  const loss = await page.evaluate(chartInfo, 'train:loss');
  Object.assign(seen, {
    reloaded: !finished.marker,
    lossPoints: loss ? loss.points : 0,
    logHosts: [...new Set([...seen.logHosts, ...finished.logHosts])].sort(),
    metricCharts: finished.charts,
    ranksAtTheEnd: finished.ranks,
  });
}

async function compare(page, options, deadline, seen) {
  const jobs = options.jobs.split(',').filter(Boolean);
  const route = `/compare?jobs=${jobs.map(encodeURIComponent).join(',')}`;
  await page.goto(routeUrl(options.url, route), { timeout: deadline.remainingMs() });
  await waitFor(page, deadline, `the ${options.metric} chart with ${jobs.length} series`, chartHasSeries,
    { metric: options.metric, count: jobs.length });
  await screenshot(page, options, 'compare.png');
  const info = await page.evaluate(chartInfo, options.metric);
  const state = await page.evaluate(pageState);
  Object.assign(seen, { series: info.series, points: info.points, charts: state.charts });
}

async function timeline(page, options, deadline, seen) {
  const route = `/timeline/${encodeURIComponent(options.job)}?file=${encodeURIComponent(options.file)}`;
  await page.goto(routeUrl(options.url, route), { timeout: deadline.remainingMs() });
  seen.spans = await waitFor(page, deadline, 'the timeline canvas with spans', timelineSpans);
  await page.evaluate(nextTwoFrames); // let the first frame paint before the screenshot
  await screenshot(page, options, 'timeline.png');
  // One step's breakdown: the second step chosen (the first may hold start-up work).
  seen.steps = Number(await page.getAttribute('section[data-steps]', 'data-steps', { timeout: deadline.remainingMs() }));
  if (seen.steps >= 2) {
    await page.selectOption('#timeline-step', '1', { timeout: deadline.remainingMs() });
    await page.evaluate(nextTwoFrames);
    seen.stepActivities = await page.$$eval('section[data-steps] tr[data-activity]', (rows) => rows.map((r) => r.dataset.activity));
    await screenshot(page, options, 'timeline-step.png');
  }
}

// The precision/recall page of a coco-eval report file in a job's directory: its charts
// (one per area range) once each has points.
async function precisionRecall(page, options, deadline, seen) {
  const route = `/pr/${encodeURIComponent(options.job)}?file=${encodeURIComponent(options.file)}`;
  await page.goto(routeUrl(options.url, route), { timeout: deadline.remainingMs() });
  await waitFor(page, deadline, 'four precision/recall charts with points', () => {
    const charts = [...document.querySelectorAll('.chart[data-metric]')];
    return charts.length === 4 && charts.every((c) => Number(c.dataset.points) > 0);
  });
  await page.evaluate(nextTwoFrames);
  await screenshot(page, options, 'precision-recall.png');
  seen.charts = await page.$$eval('.chart[data-metric]', (charts) => charts.map((c) => ({
    metric: c.dataset.metric, series: Number(c.dataset.series), points: Number(c.dataset.points),
  })));
}

// A job's page once `--metric` has points (the docs' picture of the main job is taken so):
// saved as --name (default job-page.png).
async function jobPage(page, options, deadline, seen) {
  await page.goto(routeUrl(options.url, `/job/${encodeURIComponent(options.job)}`), { timeout: deadline.remainingMs() });
  await waitFor(page, deadline, `points on the ${options.metric} chart`, chartHasPoints, options.metric);
  await page.evaluate(nextTwoFrames);
  await screenshot(page, options, options.name || 'job-page.png');
  Object.assign(seen, await page.evaluate(chartInfo, options.metric));
}

async function request(page, options, deadline, seen) {
  const response = await page.goto(options.url, { timeout: deadline.remainingMs() });
  seen.status = response ? response.status() : 0;
  seen.title = await page.title();
}

// Each scenario with the options it needs besides --url.
const SCENARIOS = {
  'live-job': { run: liveJob, needs: ['job', 'gate'] },
  compare: { run: compare, needs: ['jobs', 'metric'] },
  timeline: { run: timeline, needs: ['job', 'file'] },
  'job-page': { run: jobPage, needs: ['job', 'metric'] },
  'precision-recall': { run: precisionRecall, needs: ['job', 'file'] },
  request: { run: request, needs: [] },
};

// ---- main

function loadPlaywright() {
  const modules = process.env.DTRAIN_NPM_MODULES;
  if (!modules) throw new SetupFailure('DTRAIN_NPM_MODULES is not set (the node_modules holding playwright-core)');
  try {
    return require(path.resolve(modules, 'playwright-core'));
  } catch (err) {
    throw new SetupFailure(`cannot load playwright-core from ${modules}: ${err.message.split('\n')[0]}`);
  }
}

async function run(options, seen) {
  const scenario = SCENARIOS[options.scenario].run;
  const deadline = new Deadline(options.timeout);
  const { chromium } = loadPlaywright();
  if (!fs.existsSync(CHROMIUM)) throw new SetupFailure(`no browser at ${CHROMIUM} (apt-get install chromium)`);
  const browser = await chromium.launch({
    executablePath: CHROMIUM, args: ['--no-sandbox'], headless: true, timeout: deadline.remainingMs(),
  });
  const pageErrors = [];
  seen.pageErrors = pageErrors;
  let page = null;
  try {
    page = await browser.newPage({ viewport: VIEWPORT });
    page.on('pageerror', (err) => pageErrors.push(String(err.message).split('\n')[0]));
    await scenario(page, options, deadline, seen);
  } catch (err) {
    if (page) await screenshot(page, options, `failure-${options.scenario}.png`).catch(() => {});
    throw err;
  } finally {
    await browser.close().catch(() => {});
  }
}

async function main() {
  const seen = {};
  let options;
  try {
    options = parseArgs(process.argv.slice(2));
    await run(options, seen);
    process.stdout.write(`${JSON.stringify(seen)}\n`);
    return 0;
  } catch (err) {
    const ours = err instanceof CheckFailure || err instanceof SetupFailure;
    const message = ours ? err.message : `${err.name}: ${String(err.message).split('\n')[0]}`;
    process.stdout.write(`${JSON.stringify({ ...seen, error: message })}\n`);
    process.stderr.write(`browser_check ${process.argv[2] || ''}: ${message}\n`);
    return err instanceof SetupFailure ? 2 : 1;
  }
}

// A hard stop in case something outside the waits hangs (a browser that never starts).
const hardStopSeconds = (() => {
  const i = process.argv.indexOf('--timeout');
  const seconds = i > 0 ? Number(process.argv[i + 1]) : 120;
  return (seconds > 0 ? seconds : 120) + 30;
})();
const hardStop = setTimeout(() => {
  const message = `still running after ${hardStopSeconds} s; giving up`;
  process.stdout.write(`${JSON.stringify({ error: message })}\n`);
  process.stderr.write(`browser_check: ${message}\n`);
  process.exit(1);
}, hardStopSeconds * 1000);

main().then((code) => {
  clearTimeout(hardStop);
  process.exitCode = code;
});
