// @ts-check
/* Live: the latest calls of the delivery log, then the calls as they arrive (GET /admin/stream,
 * read with fetch so that the token stays in a header), newest first, each shown once. */
import { hasToken, isUnauthorized, listMessages, messageOf, openStream, tokenRefused } from '../api.js';
import { $, button, clear, el, input, notice, select, time } from '../dom.js';
import { openDelivery, openMessage, shownDelivery } from './message.js';

const LIVE_LIMIT = 500;
/** Calls read from the delivery log when the live view starts: it opens with the latest ones. */
const LIVE_BACKLOG = 100;

/**
 * An attempt as the stream tells it.
 * @typedef {object} StreamAttempt
 * @property {string} source
 * @property {string} messageId
 * @property {number} attempt
 * @property {'delivered' | 'retry' | 'failed'} outcome
 * @property {ReadonlyArray<{ url: string, status: number | null, error: string | null, durationMs: number }>} urls
 */
/**
 * A call accepted, as the stream tells it.
 * @typedef {object} StreamAccepted
 * @property {string} source
 * @property {string} messageId
 * @property {string | null} type
 * @property {string | null} event
 * @property {string | null} userId
 * @property {string} receivedAt
 * @property {string} state
 * @property {string | null} body
 * @property {boolean} [bodyOmitted] relayed from another instance without its body
 */
/**
 * A call refused, as the stream tells it.
 * @typedef {object} StreamRefused
 * @property {string} source
 * @property {string} messageId
 * @property {string | null} type
 * @property {string} receivedAt
 * @property {string} reason
 */
/**
 * The events of GET /admin/stream.
 * @typedef {{ event: 'accepted', data: StreamAccepted } | { event: 'refused', data: StreamRefused }
 *   | { event: 'attempt', data: StreamAttempt } | { event: 'replayed', data: { source: string, messageId: string } }} LiveEvent
 */
/** @type {readonly string[]} */
const LIVE_EVENTS = ['accepted', 'refused', 'attempt', 'replayed'];
/**
 * A call shown in the list.
 * @typedef {object} LiveItem
 * @property {string} key source and messageId
 * @property {string} source
 * @property {string} messageId
 * @property {string | null} type
 * @property {string | null} event
 * @property {string | null} userId
 * @property {string} receivedAt
 * @property {string} state
 * @property {string | null} body
 * @property {string | null} reason
 * @property {StreamAttempt[]} attempts
 * @property {boolean} loaded read from the log (not streamed)
 */

/** @type {AbortController | undefined} */
let streamControl;
let paused = false;
/** Newest first. @type {LiveItem[]} */
let liveItems = [];
/** @type {Map<string, LiveItem>} */
const liveByKey = new Map();

/** Opens the stream of the source picked (closing the one open), and reads the latest calls. */
export function startStream() {
  if (streamControl) streamControl.abort();
  const control = new AbortController();
  streamControl = control;
  const source = select('live-source').value;
  $('live-status').textContent = 'connecting';
  openStream(source, control.signal)
    .then(async (response) => {
      if (response.status === 401) return tokenRefused();
      if (!response.ok || !response.body) throw new Error(`HTTP ${response.status}`);
      $('live-status').textContent = 'live';
      // Connected first, then read: a call accepted in between is in both, and shown once.
      void loadRecent(control, source);
      const reader = response.body.getReader();
      const decoder = new TextDecoder();
      let buffer = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += decoder.decode(value, { stream: true });
        let end;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          parseEvent(block);
        }
      }
      throw new Error('stream ended');
    })
    .catch((error) => {
      if (control.signal.aborted) return;
      $('live-status').textContent = `disconnected (${messageOf(error)}); retrying`;
      setTimeout(() => {
        if (streamControl === control && hasToken()) startStream();
      }, 2000);
    });
}

/** Closes the stream (sign out). */
export function stopStream() {
  if (streamControl) streamControl.abort();
}

/**
 * A duplicate or a refused call is a line of its own beside the call it repeats: '' for the call itself.
 * @param {{ state: string }} item
 */
function kindOf(item) {
  return item.state === 'duplicate' || item.state === 'refused' ? item.state : '';
}

/** Keeps the newest LIVE_LIMIT items. */
function trim() {
  if (liveItems.length > LIVE_LIMIT) {
    for (const old of liveItems.splice(LIVE_LIMIT)) if (liveByKey.get(old.key) === old) liveByKey.delete(old.key);
  }
}

/**
 * The latest calls of the delivery log, under those that streamed in since the stream opened.
 * @param {AbortController} control
 * @param {string} source
 */
async function loadRecent(control, source) {
  const params = new URLSearchParams({ limit: String(LIVE_BACKLOG) });
  if (source) params.set('source', source);
  let page;
  try {
    page = await listMessages(params);
  } catch (error) {
    if (!isUnauthorized(error) && streamControl === control) notice(`Could not read the latest calls: ${messageOf(error)}`);
    return;
  }
  // The source was changed, or the stream opened again, while this was read.
  if (streamControl !== control) return;
  const shown = new Set(liveItems.map((item) => `${item.key}\u0000${kindOf(item)}`));
  /** @type {LiveItem[]} */
  const added = [];
  for (const row of page.items) {
    const key = `${row.source}\u0000${row.messageId}`;
    // A duplicate or a refused call is a line of its own in the log and in the stream.
    const kind = kindOf({ state: row.status });
    if (shown.has(`${key}\u0000${kind}`)) continue;
    shown.add(`${key}\u0000${kind}`);
    /** @type {LiveItem} */
    const item = {
      key,
      source: row.source,
      messageId: row.messageId,
      type: row.type,
      event: row.event,
      userId: row.userId,
      receivedAt: row.receivedAt,
      state: row.status,
      body: null,
      reason: row.reason || `messageId ${row.messageId}: click to open`,
      attempts: [],
      loaded: true,
    };
    added.push(item);
    const mine = liveByKey.get(key);
    if (mine === undefined || (kind === '' && kindOf(mine) !== '')) liveByKey.set(key, item);
  }
  // Newest first: what streamed in is newer than what the log held, ties kept in that order.
  liveItems = liveItems.concat(added).sort((a, b) => (a.receivedAt < b.receivedAt ? 1 : a.receivedAt > b.receivedAt ? -1 : 0));
  trim();
  if (!paused) renderLive();
}

/**
 * One Server-Sent Event's block.
 * @param {string} block
 */
function parseEvent(block) {
  let event = 'message';
  /** @type {string[]} */
  const data = [];
  for (const line of block.split('\n')) {
    if (line.startsWith('event:')) event = line.slice(6).trim();
    else if (line.startsWith('data:')) data.push(line.slice(5).trimStart());
  }
  if (data.length === 0) return;
  let payload;
  try {
    payload = JSON.parse(data.join('\n'));
  } catch {
    return;
  }
  if (!LIVE_EVENTS.includes(event)) return;
  // As the server sends them (observability/operations.ts).
  onLiveEvent(/** @type {LiveEvent} */ ({ event, data: payload }));
}

/**
 * @param {LiveEvent} live
 */
function onLiveEvent(live) {
  const { data } = live;
  const key = `${data.source}\u0000${data.messageId}`;
  if (live.event === 'accepted' || live.event === 'refused') {
    const accepted = live.event === 'accepted' ? live.data : undefined;
    /** @type {LiveItem} */
    const item = {
      key,
      loaded: false,
      source: live.data.source,
      messageId: live.data.messageId,
      type: live.data.type,
      event: accepted?.event || null,
      userId: accepted ? accepted.userId : null,
      receivedAt: live.data.receivedAt,
      state: accepted ? accepted.state : 'refused',
      body: accepted ? accepted.body : null,
      // Relayed from another instance without its body (too large for a notification).
      reason: (live.event === 'refused' && live.data.reason) || (accepted?.bodyOmitted ? 'Body too large to relay from the instance that accepted it: click to open the message.' : null),
      attempts: [],
    };
    // Read from the log while its notice was on the way: the same call, shown once.
    const twin = liveItems.findIndex((other) => other.loaded && other.key === key && kindOf(other) === kindOf(item));
    const found = liveItems[twin];
    if (found !== undefined) {
      item.state = found.state;
      if (liveByKey.get(key) === found) liveByKey.set(key, item);
      liveItems[twin] = item;
      if (!paused) renderLive();
      return;
    }
    liveItems.unshift(item);
    if (!liveByKey.has(key) || live.event !== 'refused') liveByKey.set(key, item);
    trim();
  } else {
    const item = liveByKey.get(key);
    if (item) {
      if (live.event === 'attempt') {
        item.state = live.data.outcome === 'retry' ? 'retrying' : live.data.outcome;
        item.attempts.push(live.data);
      } else {
        item.state = 'pending';
      }
    }
    const detail = shownDelivery();
    if (detail && detail.source === data.source && detail.messageId === data.messageId) openDelivery(detail.id, false);
  }
  if (!paused) renderLive();
}

/**
 * Whether an item passes the type and text filters.
 * @param {LiveItem} item
 */
function liveMatches(item) {
  const type = select('live-type').value;
  if (type && item.type !== type) return false;
  const text = input('live-text').value.trim().toLowerCase();
  if (!text) return true;
  return [item.messageId, item.userId, item.type, item.event, item.body, item.reason].some((v) => typeof v === 'string' && v.toLowerCase().includes(text));
}

/** Draws the list again, with the filters. */
function renderLive() {
  const list = $('live-list');
  clear(list);
  for (const item of liveItems) {
    if (!liveMatches(item)) continue;
    const li = el('li');
    li.dataset.messageId = item.messageId;
    const head = el('div', undefined, 'head');
    head.appendChild(el('span', time(item.receivedAt), 'muted'));
    head.appendChild(el('span', item.source));
    head.appendChild(el('strong', item.type || '?'));
    // The track event's name, on every row (empty for the other types).
    head.appendChild(el('span', item.event || '', 'event'));
    head.appendChild(el('span', item.userId || ''));
    head.appendChild(el('span', item.state, `badge ${item.state}`));
    const last = item.attempts[item.attempts.length - 1];
    if (last !== undefined) {
      const what = last.urls.map((u) => (u.status !== null ? `HTTP ${u.status}` : u.error)).join(', ');
      head.appendChild(el('span', `attempt ${last.attempt}: ${what}`, 'muted'));
    }
    li.appendChild(head);
    li.appendChild(el('div', item.body || item.reason || '', 'body'));
    li.addEventListener('click', () => openMessage(item.source, item.messageId));
    list.appendChild(li);
  }
}

/** Wires the Live controls: the source (a new stream), the filters, Pause. */
export function setUpLive() {
  select('live-source').addEventListener('change', () => {
    liveItems = [];
    liveByKey.clear();
    renderLive();
    startStream();
  });
  select('live-type').addEventListener('change', renderLive);
  input('live-text').addEventListener('input', renderLive);
  button('live-pause').addEventListener('click', () => {
    paused = !paused;
    $('live-pause').textContent = paused ? 'Resume' : 'Pause';
    if (!paused) renderLive();
  });
}
