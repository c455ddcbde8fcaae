// @ts-check
/* Message: one delivery with its fields, its attempts and its body, and a Replay button. */
import { getDelivery, isUnauthorized, listMessages, messageOf, replayDelivery } from '../api.js';
import { $, button, clear, el, notice } from '../dom.js';
import { show } from '../views.js';

/** @typedef {import('../api.js').Delivery} Delivery */

/** The delivery shown, as the API last answered it. */
/** @type {Delivery | undefined} */
let detail;

/** The delivery the Message view shows, if any. */
export function shownDelivery() {
  return detail;
}

/**
 * Opens a message of the live view: its delivery (rather than a duplicate's line), in the Message view.
 * @param {string} source
 * @param {string} messageId
 */
export async function openMessage(source, messageId) {
  try {
    const page = await listMessages(new URLSearchParams({ source, messageId, limit: '20' }));
    const rows = page.items;
    const found = rows.find((r) => r.status !== 'duplicate') || rows[0];
    if (!found) return notice('That message is not in the delivery log (yet).', 'info');
    await openDelivery(found.id, true);
  } catch (error) {
    if (!isUnauthorized(error)) notice(messageOf(error));
  }
}

/**
 * Shows a delivery; `switchView`: the Message view comes up (else it is only drawn again).
 * @param {number} id
 * @param {boolean} switchView
 */
export async function openDelivery(id, switchView) {
  /** @type {Delivery} */
  let d;
  try {
    d = await getDelivery(id);
  } catch (error) {
    if (!isUnauthorized(error)) notice(messageOf(error));
    return;
  }
  detail = d;
  $('message-empty').hidden = true;
  $('message-detail').hidden = false;
  const fields = $('message-fields');
  clear(fields);
  /** @type {Array<[string, string | number | null]>} */
  const rows = [
    ['delivery id', d.id],
    ['status', d.status],
    ['source', d.source],
    ['type', d.type],
    ['event', d.event],
    ['userId', d.userId],
    ['messageId', d.messageId],
    ['received', d.receivedAt],
    ['finished', d.finishedAt],
    ['attempts', d.attempts],
    ['series', d.series],
    ['reason', d.reason],
  ];
  for (const [name, value] of rows) {
    fields.appendChild(el('dt', name));
    const dd = el('dd', value === null || value === undefined ? '-' : value);
    if (name === 'status') dd.id = 'message-status';
    fields.appendChild(dd);
  }
  // In order per user: the older call of the same user this one waits for, a link to it.
  const behind = d.waitingBehind;
  if (behind) {
    fields.appendChild(el('dt', 'waiting behind'));
    const dd = el('dd');
    dd.id = 'message-waiting';
    const behindId = behind.id;
    if (behindId === null) dd.textContent = behind.messageId;
    else {
      const link = el('a', behind.messageId);
      link.href = '#';
      link.addEventListener('click', (event) => {
        event.preventDefault();
        void openDelivery(behindId, false);
      });
      dd.appendChild(link);
    }
    fields.appendChild(dd);
  }
  const attempts = $('attempts');
  clear(attempts);
  for (const a of d.attemptLog) {
    const tr = el('tr');
    for (const value of [a.series, a.attempt, a.at, a.url, a.status, a.error, a.durationMs, a.outcome, a.nextAttemptAt]) {
      tr.appendChild(el('td', value === null || value === undefined ? '-' : value));
    }
    // What the receiver answered (its first 2,048 bytes), as text; '-' for none or erased.
    tr.appendChild(el('td', a.responseBody === null || a.responseBody === undefined ? '-' : a.responseBody, 'response'));
    attempts.appendChild(tr);
  }
  let body = d.body;
  if (body) {
    try {
      body = JSON.stringify(JSON.parse(body), null, 2);
    } catch {
      // shown as stored
    }
  }
  $('message-body').textContent = body || (d.hasBody ? '' : 'Not stored (erased when delivered, or never made).');
  const replayable = d.status === 'failed' || (d.status === 'delivered' && d.hasBody);
  button('replay').disabled = !replayable;
  if (switchView) {
    $('replay-result').textContent = '';
    show('message');
  }
}

/** Queues the delivery shown again, and follows it until it is done (10 s at most). */
export async function replay() {
  if (!detail) return;
  button('replay').disabled = true;
  try {
    const result = await replayDelivery(detail.id);
    $('replay-result').textContent = `queued again (series ${result.series})`;
    for (let i = 0; i < 20; i++) {
      await openDelivery(detail.id, false);
      if (detail.status !== 'pending' && detail.status !== 'retrying') break;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  } catch (error) {
    if (!isUnauthorized(error)) $('replay-result').textContent = messageOf(error);
  }
}
