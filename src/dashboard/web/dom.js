// A small element builder, so pages read as a tree of what they show instead of a sequence
// of createElement/setAttribute calls. Text always goes in as text, never as HTML: job names,
// log lines and failure reasons come from user programs.

// el('a', {class: 'x', href: '#/', 'data-job': id, onclick: fn}, 'text', childNode, [more])
export function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value === null || value === undefined || value === false) continue;
    if (key === 'class') node.className = value;
    else if (key === 'text') node.textContent = value;
    else if (key.startsWith('on') && typeof value === 'function') node.addEventListener(key.slice(2), value);
    else if (key in node && !key.startsWith('data-') && !key.startsWith('aria-')) node[key] = value;
    else node.setAttribute(key, value === true ? '' : String(value));
  }
  appendChildren(node, children);
  return node;
}

export function appendChildren(node, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

// Replaces everything inside `node` with `children`.
export function replaceChildren(node, ...children) {
  node.textContent = '';
  return appendChildren(node, children);
}

// Writes text only when it changed, so a table refreshed every second does not disturb a
// text selection or restart CSS transitions in cells whose content stayed the same.
export function setText(node, text) {
  const value = String(text);
  if (node.textContent !== value) node.textContent = value;
}

export function setAttr(node, name, value) {
  const text = String(value);
  if (node.getAttribute(name) !== text) node.setAttribute(name, text);
}

// <thead> with one <th> per name; the names in `numeric` are right-aligned like their cells.
export function tableHead(names, numeric = []) {
  const cell = (name) => el('th', { class: numeric.includes(name) ? 'num' : null }, name);
  return el('thead', {}, el('tr', {}, names.map(cell)));
}

// A short message in place of content that is not there (yet): "no metric samples yet".
export function emptyNote(text) {
  return el('p', { class: 'empty-note' }, text);
}
