// @ts-check
/* Search the delivery log, page by page, and recover the failed deliveries of a source since a time. */
import { isUnauthorized, listMessages, messageOf, recover } from '../api.js';
import { $, clear, el, input, notice, select } from '../dom.js';
import { openDelivery } from './message.js';

/** The cursor of the next page; null on the last one. @type {string | null} */
let searchCursor = null;

/** The fields of the search form, by query parameter. @type {Array<[string, () => HTMLInputElement | HTMLSelectElement]>} */
const FIELDS = [
  ['source', () => select('search-source')],
  ['status', () => select('search-status')],
  ['type', () => input('search-type')],
  ['event', () => input('search-event')],
  ['messageId', () => input('search-message-id')],
  ['userId', () => input('search-user-id')],
];

/**
 * Searches with the form; `more`: the next page, under the rows shown.
 * @param {boolean} more
 */
export async function search(more) {
  const params = new URLSearchParams({ limit: '50' });
  for (const [name, field] of FIELDS) {
    const value = field().value.trim();
    if (value) params.set(name, value);
  }
  if (more && searchCursor) params.set('cursor', searchCursor);
  const tbody = $('search-results');
  try {
    const page = await listMessages(params);
    if (!more) clear(tbody);
    for (const row of page.items) {
      const tr = el('tr', undefined, 'link');
      for (const value of [row.id, row.receivedAt, row.source, row.type, row.event, row.userId, row.messageId]) tr.appendChild(el('td', value === null ? '-' : value));
      const status = el('td');
      status.appendChild(el('span', row.status, `badge ${row.status}`));
      tr.appendChild(status);
      tr.appendChild(el('td', row.attempts));
      tr.addEventListener('click', () => openDelivery(row.id, true));
      tbody.appendChild(tr);
    }
    searchCursor = page.nextCursor;
    $('search-more').hidden = !searchCursor;
  } catch (error) {
    if (!isUnauthorized(error)) notice(messageOf(error));
  }
}

/** The first search, when the view first shows. */
export function searchIfEmpty() {
  if ($('search-results').childElementCount === 0) void search(false);
}

/** Queues again the failed deliveries of the source since the time picked. */
async function recoverFailed() {
  const since = new Date(input('recover-since').value);
  if (Number.isNaN(since.getTime())) return;
  try {
    const result = await recover({ source: select('recover-source').value, since: since.toISOString() });
    $('recover-result').textContent = `${result.queued} failed deliveries queued again`;
  } catch (error) {
    if (!isUnauthorized(error)) $('recover-result').textContent = messageOf(error);
  }
}

/** Wires the search form, More, and the recover form. */
export function setUpSearch() {
  $('search-form').addEventListener('submit', (event) => {
    event.preventDefault();
    void search(false);
  });
  $('search-more').addEventListener('click', () => search(true));
  $('recover-form').addEventListener('submit', (event) => {
    event.preventDefault();
    void recoverFailed();
  });
}
