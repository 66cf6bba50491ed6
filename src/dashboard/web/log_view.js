// A job's logs, following the tail like `tail -f`: a host picker (<select id="log-host">,
// "all hosts" or one host) and <div id="log"> of <div class="log-line" data-host="H">.
// Every host's log is polled on its own byte offset: the first request (no `from`) gets the
// server's tail, later ones continue from the `next` it returned. A line's host is the one
// that produced it: the master relays every rank's output into its own log with a
// `[algo-2:1]` prefix, so such a line is algo-2's wherever it was logged. The picker hides
// the other hosts' lines rather than fetching anew.

import { getJson, jobApiPath, streamHasMore, streamRestarted } from './api.js';
import { el, replaceChildren } from './dom.js';
import { startPolling } from './poll.js';

const MAX_LINES = 5000; // older lines are dropped: a long run's log would make the page crawl
const ALL_HOSTS = '';

export class LogView {
  constructor(jobId) {
    this.jobId = jobId;
    this.hosts = [];
    this.offsets = new Map(); // host -> next byte offset (absent: ask for the tail)
    this.generation = 0; // bumped when the host choice changes; older responses are dropped
    this.select = el('select', { id: 'log-host', onchange: () => this.applyFilter() }, allHostsOption());
    this.lines = el('div', { id: 'log', class: 'log all-hosts', tabindex: 0 });
    this.status = el('span', { class: 'muted log-status' });
    this.element = el('section', { class: 'card log-card' },
      el('div', { class: 'card-header' },
        el('h2', {}, 'Log'),
        el('label', { class: 'log-picker' }, 'Show ', this.select),
        this.status),
      this.lines);
    this.poller = startPolling(() => this.pollAll(), 1000);
  }

  // The hosts that have logs, from the job details; new ones get an option and a poll.
  setHosts(hosts) {
    const valid = (Array.isArray(hosts) ? hosts : []).filter((h) => typeof h === 'string' && h !== '');
    if (valid.join('\n') === this.hosts.join('\n')) return;
    this.hosts = valid;
    const chosen = this.select.value;
    replaceChildren(this.select, allHostsOption(), valid.map((h) => el('option', { value: h }, h)));
    this.select.value = valid.includes(chosen) ? chosen : ALL_HOSTS;
    this.poller.now();
  }

  // Shows the chosen host's lines only (all with "all hosts").
  applyFilter() {
    const chosen = this.select.value;
    this.lines.classList.toggle('all-hosts', chosen === ALL_HOSTS);
    for (const line of this.lines.children) line.hidden = chosen !== ALL_HOSTS && line.dataset.host !== chosen;
    this.lines.scrollTop = this.lines.scrollHeight;
  }

  // A rewritten log starts over from each host's tail.
  restart() {
    this.generation += 1;
    this.offsets.clear();
    replaceChildren(this.lines);
    this.poller.now();
  }

  async pollAll() {
    const generation = this.generation;
    const results = await Promise.all(this.hosts.map((host) => this.fetchHost(host, generation)));
    if (generation !== this.generation) return;
    if (results.some((r) => r.restarted)) {
      this.restart();
      return;
    }
    const failed = results.filter((r) => r.error);
    this.status.textContent = failed.length ? `${failed.map((r) => r.host).join(', ')}: ${failed[0].error}` : '';
    for (const result of results) if (result.text) this.append(result.host, result.text);
    if (results.some((r) => r.more)) this.poller.now();
  }

  async fetchHost(host, generation) {
    const from = this.offsets.get(host);
    try {
      const reply = await getJson(jobApiPath(this.jobId, '/log'), { host, from });
      // After a restart() the answer is dropped, so its offset must not be kept either.
      if (Number.isFinite(reply.next) && generation === this.generation) this.offsets.set(host, reply.next);
      const text = typeof reply.text === 'string' ? reply.text : '';
      return { host, text, more: streamHasMore(reply, text.length), restarted: streamRestarted(from, reply) };
    } catch (err) {
      // No log yet for a starting host is normal, and the banner reports a lost server.
      return { host, text: '', error: err.isNotFound || err.isNetwork ? null : err.message };
    }
  }

  append(host, text) {
    const following = this.isScrolledToBottom();
    const fragment = document.createDocumentFragment();
    const lines = text.split('\n');
    if (lines[lines.length - 1] === '') lines.pop(); // the text ends with a newline
    const chosen = this.select.value;
    for (const line of lines) {
      const element = logLine(host, line);
      element.hidden = chosen !== ALL_HOSTS && element.dataset.host !== chosen;
      fragment.append(element);
    }
    this.lines.append(fragment);
    while (this.lines.childElementCount > MAX_LINES) this.lines.firstElementChild.remove();
    if (following) this.lines.scrollTop = this.lines.scrollHeight;
  }

  // Within a few pixels of the end counts as following; scrolling up to read stops it.
  isScrolledToBottom() {
    const box = this.lines;
    return box.scrollHeight - box.scrollTop - box.clientHeight < 8;
  }

  destroy() {
    this.poller.stop();
    this.generation += 1;
  }
}

// `fileHost`: whose log the line came from; a rank prefix `[host:rank]` names the producer.
function logLine(fileHost, text) {
  const isStderr = text.includes('<stderr>:');
  const rankPrefix = /^\[([^\]\s:]+):\d+\]/.exec(text);
  const host = rankPrefix ? rankPrefix[1] : fileHost;
  return el('div', { class: isStderr ? 'log-line stderr' : 'log-line', 'data-host': host, 'data-log': fileHost }, text);
}

function allHostsOption() {
  return el('option', { value: ALL_HOSTS }, 'all hosts');
}
