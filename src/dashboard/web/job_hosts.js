// A job's hosts: one row per host with its state, how it ended and its ranks, then the
// channel staging (what was copied or linked onto each host before the job began).

import { el, emptyNote, tableHead } from './dom.js';
import { formatBytes, formatExit, formatSeconds, MISSING } from './format.js';
import { statusBadge } from './status_badge.js';

export function hostsSection(hosts) {
  const list = Array.isArray(hosts) ? hosts.filter(Boolean) : [];
  return el('section', { class: 'card hosts-card' },
    el('div', { class: 'card-header' }, el('h2', {}, 'Hosts')),
    list.length ? hostsTable(list) : emptyNote('No host has reported yet.'),
    stagingTable(list));
}

function hostsTable(hosts) {
  return el('table', { class: 'table hosts-table' },
    tableHead(['Host', 'State', 'Exit', 'Reason', 'Ranks']),
    el('tbody', {}, hosts.map((host) =>
      el('tr', { 'data-host': host.name ?? '' },
        el('td', { class: 'nowrap' }, host.name ?? MISSING),
        el('td', { class: 'state' }, statusBadge(host.state)),
        el('td', { class: 'nowrap' }, formatExit(host.exit_code, host.signal)),
        el('td', { class: 'reason' }, host.reason || ''),
        el('td', {}, ranksList(host.ranks))))));
}

function ranksList(ranks) {
  const list = Array.isArray(ranks) ? ranks.filter(Boolean) : [];
  if (!list.length) return MISSING;
  return el('ul', { class: 'ranks' }, list.map((rank) => {
    const ended = formatExit(rank.exit_code, rank.signal);
    // From the launcher's ranks.json: the process and whether it reached rendezvous.
    const details = [Number.isFinite(rank.pid) && rank.pid > 0 ? `pid ${rank.pid}` : null,
      rank.reached_rendezvous === true ? 'at rendezvous' : null].filter(Boolean).join(', ');
    return el('li', { 'data-rank': rank.rank ?? '' },
      el('span', { class: 'rank-name' }, `rank ${rank.rank ?? '?'}`),
      el('span', { class: 'muted' }, ` (local ${rank.local_rank ?? '?'}) `),
      statusBadge(rank.state),
      ended === MISSING ? null : el('span', { class: 'muted' }, ` ${ended}`),
      details ? el('span', { class: 'muted' }, ` ${details}`) : null);
  }));
}

// Empty (nothing rendered) when no host staged any channel.
function stagingTable(hosts) {
  const rows = hosts.flatMap((host) =>
    (Array.isArray(host.staging) ? host.staging.filter(Boolean) : []).map((s) => ({ host: host.name, ...s })));
  if (!rows.length) return null;
  return el('div', { class: 'staging' },
    el('h3', {}, 'Channel staging'),
    el('table', { class: 'table staging-table' },
      tableHead(['Host', 'Channel', 'Method', 'Files', 'Bytes', 'Seconds'], ['Files', 'Bytes', 'Seconds']),
      el('tbody', {}, rows.map((s) =>
        el('tr', {},
          el('td', {}, s.host ?? MISSING),
          el('td', {}, s.channel ?? MISSING),
          el('td', {}, s.method ?? MISSING),
          el('td', { class: 'num' }, Number.isFinite(s.files) ? String(s.files) : MISSING),
          el('td', { class: 'num' }, formatBytes(s.bytes)),
          el('td', { class: 'num' }, formatSeconds(s.seconds)))))));
}
