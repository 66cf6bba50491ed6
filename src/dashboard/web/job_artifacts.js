// What a job left behind: files to download, the TensorBoard command line, the runtime
// timelines (each opening the timeline page) and the precision/recall files of
// `dtrain coco-eval --report` run into the job's directory (each opening the curves page).

import { fileUrl } from './api.js';
import { el, emptyNote } from './dom.js';
import { formatBytes } from './format.js';

export function artifactsSection(job) {
  const artifacts = Array.isArray(job.artifacts) ? job.artifacts.filter((a) => a && a.path) : [];
  const timelines = Array.isArray(job.timelines) ? job.timelines.filter((t) => typeof t === 'string') : [];
  return el('section', { class: 'card artifacts-card' },
    el('div', { class: 'card-header' }, el('h2', {}, 'Artifacts')),
    artifacts.length
      ? el('ul', { class: 'artifacts' }, artifacts.map((a) =>
        el('li', {},
          el('a', { href: fileUrl(job.id, a.path), target: '_blank', rel: 'noopener' }, a.name || a.path),
          el('span', { class: 'muted' }, ` ${formatBytes(a.bytes)}`))))
      : emptyNote('No artifacts yet.'),
    tensorboard(job.tensorboard_dir),
    timelinesList(job.id, timelines),
    precisionRecallList(job.id, artifacts.filter((a) => String(a.name).endsWith('_pr.json'))));
}

function precisionRecallList(jobId, files) {
  if (!files.length) return null;
  const route = (path) => `#/pr/${encodeURIComponent(jobId)}?file=${encodeURIComponent(path)}`;
  return el('div', { class: 'timelines' },
    el('h3', {}, 'Precision/recall'),
    el('ul', {}, files.map((f) => el('li', {}, el('a', { href: route(f.path) }, f.path)))));
}

function timelinesList(jobId, timelines) {
  if (!timelines.length) return null;
  const route = (name) => `#/timeline/${encodeURIComponent(jobId)}?file=${encodeURIComponent(name)}`;
  return el('div', { class: 'timelines' },
    el('h3', {}, 'Timelines'),
    el('ul', {}, timelines.map((name) => el('li', {}, el('a', { href: route(name) }, name)))));
}

function tensorboard(dir) {
  if (!dir) return null;
  const command = `tensorboard --logdir ${shellQuote(dir)}`;
  const code = el('code', { class: 'copyable', title: 'Click to select' }, command);
  code.addEventListener('click', () => selectText(code));
  const button = el('button', { class: 'button small', onclick: () => copy(command, code, button) }, 'Copy');
  return el('div', { class: 'tensorboard' },
    el('h3', {}, 'TensorBoard'),
    el('div', { class: 'copy-row' }, code, button));
}

// Single quotes when the path holds anything a shell would interpret.
function shellQuote(text) {
  return /^[\w@%+=:,./-]+$/.test(text) ? text : `'${text.replace(/'/g, `'\\''`)}'`;
}

// The Clipboard API only exists on secure origins (https or localhost); a dashboard on a
// cluster's http address falls back to selecting the text for Ctrl+C.
async function copy(text, code, button) {
  try {
    await navigator.clipboard.writeText(text);
    button.textContent = 'Copied';
  } catch {
    selectText(code);
    button.textContent = 'Press Ctrl+C';
  }
  setTimeout(() => { button.textContent = 'Copy'; }, 2000);
}

function selectText(node) {
  const range = document.createRange();
  range.selectNodeContents(node);
  const selection = window.getSelection();
  selection.removeAllRanges();
  selection.addRange(range);
}
