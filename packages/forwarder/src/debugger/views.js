// @ts-check
/* The page's frame: which view shows, and the source pickers the views share. */
import { $, clear, el, select } from './dom.js';

/** @typedef {'signin' | 'live' | 'search' | 'message' | 'endpoints' | 'chart' | 'sources' | 'schema'} View */

/** @type {Array<(view: View) => void>} */
const listeners = [];

/**
 * Calls `listener` with the view each time one is shown.
 * @param {(view: View) => void} listener
 */
export function onShow(listener) {
  listeners.push(listener);
}

/**
 * Shows a view (its tab selected), hiding the others.
 * @param {View} next
 */
export function show(next) {
  for (const section of document.querySelectorAll('.view')) /** @type {HTMLElement} */ (section).hidden = section.id !== `view-${next}`;
  for (const tab of document.querySelectorAll('.tab')) tab.setAttribute('aria-selected', String(/** @type {HTMLElement} */ (tab).dataset.view === next));
  for (const listener of listeners) listener(next);
}

/** Signed out: the sign-in form only. */
export function showSignIn() {
  $('tabs').hidden = true;
  for (const section of document.querySelectorAll('.view')) /** @type {HTMLElement} */ (section).hidden = section.id !== 'view-signin';
}

/** The pickers of a source; those of Live and Search offer "all" too. */
const PICKERS = [
  { id: 'live-source', all: true },
  { id: 'search-source', all: true },
  { id: 'recover-source', all: false },
  { id: 'schema-source', all: false },
];

/**
 * Fills every source picker with these names.
 * @param {readonly string[]} sources
 */
export function fillSources(sources) {
  for (const { id, all } of PICKERS) {
    const picker = select(id);
    const before = picker.value;
    clear(picker);
    if (all) picker.appendChild(el('option', 'all')).value = '';
    for (const name of sources) picker.appendChild(el('option', name)).value = name;
    // A list made again keeps the source picked, while it is still there.
    if (before && sources.includes(before)) picker.value = before;
  }
}
