// The dashboard's entry point: a hash router over the pages plus the shared frame (nav bar
// and connection banner). Routing on the hash means moving between pages, and every live
// update, happens without reloading the document.
//
// A page is a function mount(root, route) returning {unmount(), update?(route)}; `route` is
// {path, params, query}. When the hash changes but stays on the same page (the compare page
// getting a new job list), update() is called instead of remounting, so data already fetched
// is kept.

import { onConnectionProblem } from './api.js';
import { el, replaceChildren } from './dom.js';
import { mountJobsPage } from './jobs_page.js';
import { mountJobPage } from './job_page.js';
import { mountComparePage } from './compare_page.js';
import { mountTimelinePage } from './timeline_page.js';
import { mountPrPage } from './pr_page.js';

const ROUTES = [
  { name: 'jobs', pattern: /^\/?$/, mount: mountJobsPage, nav: 'jobs' },
  { name: 'job', pattern: /^\/job\/([^/]+)\/?$/, mount: mountJobPage, nav: 'jobs' },
  { name: 'compare', pattern: /^\/compare\/?$/, mount: mountComparePage, nav: 'compare' },
  { name: 'timeline', pattern: /^\/timeline\/([^/]+)\/?$/, mount: mountTimelinePage, nav: 'jobs' },
  { name: 'pr', pattern: /^\/pr\/([^/]+)\/?$/, mount: mountPrPage, nav: 'jobs' },
];

const pageRoot = document.getElementById('page');
let current = null; // {routeName, page}

// "#/job/mnist-2x1?x=1" -> {path: "/job/mnist-2x1", params: ["mnist-2x1"], query: URLSearchParams}
function parseHash() {
  const hash = window.location.hash.replace(/^#/, '') || '/';
  const queryStart = hash.indexOf('?');
  const path = queryStart < 0 ? hash : hash.slice(0, queryStart);
  const query = new URLSearchParams(queryStart < 0 ? '' : hash.slice(queryStart + 1));
  for (const route of ROUTES) {
    const match = path.match(route.pattern);
    if (match) return { route, path, query, params: match.slice(1).map(safeDecode) };
  }
  return { route: null, path, query, params: [] };
}

function safeDecode(text) {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

function showRoute() {
  const location = parseHash();
  markActiveNav(location.route ? location.route.nav : null);
  if (current && location.route && current.routeName === location.route.name && current.page.update) {
    runGuarded(() => current.page.update(location));
    return;
  }
  if (current) runGuarded(() => current.page.unmount());
  current = null;
  replaceChildren(pageRoot);
  window.scrollTo(0, 0);
  if (!location.route) {
    document.title = 'Not found — dtrain dashboard';
    replaceChildren(pageRoot, notFound(location.path));
    return;
  }
  const page = runGuarded(() => location.route.mount(pageRoot, location));
  if (page) current = { routeName: location.route.name, page };
}

// A bug in one page should leave a message, not a blank screen.
function runGuarded(action) {
  try {
    return action();
  } catch (err) {
    console.error(err);
    const note = el('div', { class: 'card error-note' }, `Something went wrong drawing this page: ${err.message}`);
    replaceChildren(pageRoot, note);
    return null;
  }
}

function notFound(path) {
  return el('div', { class: 'card' },
    el('h1', {}, 'Page not found'),
    el('p', {}, `Nothing lives at #${path}. `, el('a', { href: '#/' }, 'Back to the jobs')));
}

function markActiveNav(navName) {
  for (const link of document.querySelectorAll('[data-nav]')) {
    if (link.dataset.nav === navName) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
}

function showBanner(message) {
  const banner = document.getElementById('banner');
  banner.hidden = !message;
  banner.textContent = message || '';
}

onConnectionProblem(showBanner);
window.addEventListener('unhandledrejection', (event) => console.error('unhandled:', event.reason));
window.addEventListener('hashchange', showRoute);
showRoute();
