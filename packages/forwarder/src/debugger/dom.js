// @ts-check
/* The page's DOM helpers. Every value from the server is set with textContent, never parsed as
 * HTML: payloads come from anyone holding a write key. */

/**
 * The element of the page with this id; an error names the id when there is none.
 * @param {string} id
 * @returns {HTMLElement}
 */
export function $(id) {
  const node = document.getElementById(id);
  if (node === null) throw new Error(`The debugger page has no element #${id}`);
  return node;
}

/**
 * The element with this id, checked to be of the kind the code uses (an input, a select, ...).
 * @template {HTMLElement} T
 * @param {string} id
 * @param {new () => T} kind
 * @returns {T}
 */
function typed(id, kind) {
  const node = $(id);
  if (!(node instanceof kind)) throw new Error(`#${id} of the debugger page is not a ${kind.name}`);
  return node;
}

/** @param {string} id */
export const input = (id) => typed(id, HTMLInputElement);
/** @param {string} id */
export const select = (id) => typed(id, HTMLSelectElement);
/** @param {string} id */
export const textarea = (id) => typed(id, HTMLTextAreaElement);
/** @param {string} id */
export const button = (id) => typed(id, HTMLButtonElement);

/**
 * A new element, its text set as text (`null` or undefined: none).
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag
 * @param {string | number | boolean | null} [text]
 * @param {string} [className]
 * @returns {HTMLElementTagNameMap[K]}
 */
export function el(tag, text, className) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  if (className) node.className = className;
  return node;
}

/** @param {Node} node */
export function clear(node) {
  while (node.firstChild) node.removeChild(node.firstChild);
}

/**
 * The line under the tabs: an error (the default) or an information; '' hides it.
 * @param {string} [text]
 * @param {'info'} [kind]
 */
export function notice(text, kind) {
  const node = $('notice');
  node.textContent = text || '';
  node.className = kind === 'info' ? 'info' : '';
  node.hidden = !text;
}

/**
 * A time of day in the browser's locale; '' for none.
 * @param {string | null | undefined} iso
 */
export function time(iso) {
  return iso ? new Date(iso).toLocaleTimeString() : '';
}

/**
 * A table row of cells, each value as text.
 * @param {ReadonlyArray<string | number | boolean | null>} values
 * @param {string} [className]
 */
export function row(values, className) {
  const tr = el('tr', undefined, className);
  for (const value of values) tr.appendChild(el('td', value));
  return tr;
}

/**
 * A row of one cell across the table, saying it is empty.
 * @param {string} text
 * @param {number} columns
 */
export function emptyRow(text, columns) {
  const tr = el('tr');
  const td = el('td', text, 'muted');
  td.colSpan = columns;
  tr.appendChild(td);
  return tr;
}
