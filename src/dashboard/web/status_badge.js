// Colored pills for job, host and rank states. The element's text is exactly the state
// string (tests and users read it); the color comes from a CSS class derived from it.

import { el, setAttr, setText } from './dom.js';

export function statusBadge(status) {
  const badge = el('span');
  updateStatusBadge(badge, status);
  return badge;
}

export function updateStatusBadge(badge, status) {
  const text = status || 'Unknown';
  setText(badge, text);
  setAttr(badge, 'class', `badge badge-${text.toLowerCase().replace(/[^a-z]+/g, '-')}`);
}
