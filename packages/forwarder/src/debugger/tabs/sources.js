// @ts-check
/* Sources: make a source (its write key shown once), and an editor for one: its Webhooks (the form
 * in webhooks-form.js), on and off, a test event, its browser and ingestion settings, its write
 * keys, and deleting it. */
import * as api from '../api.js';
import { isUnauthorized, messageOf } from '../api.js';
import { $, button, clear, el, input, notice, row, select, textarea } from '../dom.js';
import { fillSources } from '../views.js';
import { fillWebhooksForm, filterText, transformCode, webhooksSave } from './webhooks-form.js';

/** @typedef {import('../api.js').Source} Source */

/** The source open in the editor, as the API last showed it. @type {Source | null} */
let selected = null;

/**
 * Shows a write key, this once, with its Copy button.
 * @param {string} source
 * @param {string} writeKey
 */
function showKey(source, writeKey) {
  $('key-source').textContent = source;
  input('key-value').value = writeKey;
  $('key-copied').textContent = '';
  $('key-box').hidden = false;
}

/** A write key shown once must not outlive the session on screen (sign out). */
export function hideKey() {
  input('key-value').value = '';
  $('key-box').hidden = true;
}

async function copyKey() {
  const value = input('key-value').value;
  try {
    await navigator.clipboard.writeText(value);
    $('key-copied').textContent = 'copied';
  } catch {
    input('key-value').select();
    $('key-copied').textContent = 'select and copy it by hand';
  }
}

/**
 * Lists the sources (and fills every source picker).
 * @param {boolean} [keep] the editor stays on its source
 * @param {boolean} [refill] its Webhooks form shows the settings again
 */
export async function loadSources(keep, refill) {
  let answer;
  try {
    answer = await api.listSources();
  } catch (error) {
    if (!isUnauthorized(error)) notice(messageOf(error));
    return;
  }
  const tbody = $('sources-list');
  clear(tbody);
  for (const source of answer.sources) {
    const tr = el('tr', undefined, 'link');
    tr.dataset.source = source.name;
    const webhooks = source.destinations.Webhooks;
    tr.appendChild(el('td', source.name));
    tr.appendChild(el('td', webhooks === null ? 'none' : webhooks.enabled ? 'on' : 'off'));
    tr.appendChild(el('td', webhooks === null ? '-' : webhooks.webhooks.length));
    tr.appendChild(el('td', source.writeKeys.map((k) => `…${k.last4}`).join(' ')));
    tr.addEventListener('click', () => openSource(source));
    tbody.appendChild(tr);
  }
  fillSources(answer.sources.map((s) => s.name));
  if (keep && selected) {
    const name = selected.name;
    const fresh = answer.sources.find((s) => s.name === name);
    if (fresh) {
      openSource(fresh, true);
      if (refill) fillWebhooksForm(fresh.destinations.Webhooks);
    } else {
      closeEditor();
    }
  }
}

/** Closes the editor. */
export function closeEditor() {
  selected = null;
  $('source-editor').hidden = true;
}

/**
 * Opens a source in the editor; `keepForm`: its forms keep what is typed in them.
 * @param {Source} source
 * @param {boolean} [keepForm]
 */
function openSource(source, keepForm) {
  selected = source;
  $('editor-name').textContent = source.name;
  const current = $('editor-current');
  clear(current);
  const webhooks = source.destinations.Webhooks;
  /** @type {Array<[string, string]>} */
  const rows = [['Webhooks', webhooks === null ? 'none' : webhooks.enabled ? 'on' : 'off']];
  if (webhooks !== null) {
    webhooks.webhooks.forEach((w, i) => {
      const headers = w.headerNames.length ? ` (headers: ${w.headerNames.join(', ')})` : '';
      const limit = w.rateLimit ? `, at most ${w.rateLimit.perSecond} a second` : '';
      const batch = w.batch ? `; batched: up to ${w.batch.maxEvents} calls, ${w.batch.maxBytes} bytes, ${w.batch.maxWaitMs} ms` : '';
      rows.push([`URL ${i + 1}`, `${w.url}${headers}${limit}${filterText(w.filter)}${batch}`]);
    });
    rows.push(['signing', `${webhooks.signing}${webhooks.hasSharedSecret ? ', with a shared secret' : ', unsigned'}`]);
    rows.push(['order', webhooks.ordering === 'user' ? 'per user' : 'none']);
  }
  rows.push(['allowed origins', source.allowedOrigins === null ? 'none (no browser requests)' : source.allowedOrigins.join(', ') || 'none']);
  rows.push(['ingestion limit', source.ingestRateLimit === null ? 'none' : `${source.ingestRateLimit.perSecond} a second, burst ${source.ingestRateLimit.burst}`]);
  for (const [name, value] of rows) {
    current.appendChild(el('dt', name));
    current.appendChild(el('dd', value));
  }
  button('wh-toggle').disabled = webhooks === null;
  button('wh-test').disabled = webhooks === null;
  $('wh-toggle').textContent = webhooks !== null && webhooks.enabled ? 'Switch off' : 'Switch on';
  const keys = $('source-keys');
  clear(keys);
  for (const k of source.writeKeys) keys.appendChild(row([k.id, k.last4, k.origin, k.createdAt, k.expiresAt || '-']));
  if (!keepForm) {
    fillWebhooksForm(webhooks);
    $('wh-result').textContent = '';
    textarea('settings-origins').value = (source.allowedOrigins || []).join('\n');
    input('settings-rate').value = source.ingestRateLimit ? String(source.ingestRateLimit.perSecond) : '';
    input('settings-burst').value = source.ingestRateLimit ? String(source.ingestRateLimit.burst) : '';
    $('settings-result').textContent = '';
    $('wh-test-summary').textContent = '';
    clear($('wh-test-results'));
  }
  $('source-editor').hidden = false;
}

async function createSource() {
  const name = input('source-name').value;
  try {
    const created = await api.createSource({ name });
    input('source-name').value = '';
    $('source-result').textContent = `created ${created.name}`;
    showKey(created.name, created.writeKey);
    await loadSources();
    const line = [...document.querySelectorAll('#sources-list tr')].find((tr) => /** @type {HTMLElement} */ (tr).dataset.source === created.name);
    if (line) /** @type {HTMLElement} */ (line).click();
  } catch (error) {
    if (!isUnauthorized(error)) $('source-result').textContent = messageOf(error);
  }
}

async function saveWebhooks() {
  if (!selected) return;
  try {
    const name = selected.name;
    // Cleared first: a "saved" left from the save before must not stand for this one.
    $('wh-result').textContent = 'saving…';
    const save = webhooksSave();
    if (save === null) {
      $('wh-result').textContent = 'nothing changed';
      return;
    }
    if (save.method === 'PUT') await api.putWebhooks(name, save.body);
    else await api.patchWebhooks(name, save.body);
    await loadSources(true, true);
    $('wh-result').textContent = 'saved';
  } catch (error) {
    if (!isUnauthorized(error)) $('wh-result').textContent = messageOf(error);
  }
}

/**
 * The webhook message of a recent call of the source, to try a transform on: the newest whose body
 * the log still has, else one made from the newest line's type, event and user (a sample when the
 * source has no call yet). `from` says which.
 * @param {string} source
 * @returns {Promise<{ message: Record<string, unknown>, from: string }>}
 */
async function recentMessage(source) {
  const page = await api.listMessages(new URLSearchParams({ source, limit: '20' }));
  const kept = page.items.find((item) => item.hasBody);
  if (kept) {
    const detail = await api.getDelivery(kept.id);
    if (detail.body !== null) return { message: JSON.parse(detail.body), from: `call ${kept.messageId}` };
  }
  const newest = page.items[0];
  if (newest) {
    /** @type {Record<string, unknown>} */
    const message = { type: newest.type ?? 'track', messageId: newest.messageId, userId: newest.userId, timestamp: newest.receivedAt };
    if (newest.event !== null) message.event = newest.event;
    return { message, from: `call ${newest.messageId} (its body is no longer kept: type, event and user only)` };
  }
  return { message: { type: 'track', event: 'Test Event', userId: 'test-user', messageId: 'sample', properties: {} }, from: 'a sample track call (the source has no call yet)' };
}

/** Runs the transform typed for the chosen URL on a recent call of the source, and shows what it returned or why it failed. */
async function tryTransform() {
  if (!selected) return;
  const index = Number(select('tf-url').value);
  const code = transformCode(index);
  const output = $('tf-output');
  output.hidden = true;
  if (code.trim() === '') {
    $('tf-summary').textContent = `URL ${index + 1} has no transform: it gets the message as it is`;
    return;
  }
  $('tf-summary').textContent = 'running…';
  try {
    const { message, from } = await recentMessage(selected.name);
    const answer = await api.testTransform({ code, message });
    $('tf-summary').textContent = `${answer.output === null ? 'skipped (null): this call would not go to that URL' : 'output'}, on ${from}, in ${answer.durationMs} ms`;
    output.textContent = JSON.stringify(answer.output, null, 2);
    output.className = 'ok';
    output.hidden = false;
  } catch (error) {
    if (isUnauthorized(error)) return;
    $('tf-summary').textContent = 'failed';
    output.textContent = messageOf(error);
    output.className = 'failed';
    output.hidden = false;
  }
}

async function saveSettings() {
  if (!selected) return;
  try {
    /** @type {import('../api.js').Body<'putSourceSettings'>} */
    const body = {};
    const origins = textarea('settings-origins').value.split('\n').map((line) => line.trim()).filter((line) => line !== '');
    if (origins.length) body.allowedOrigins = origins;
    const rate = input('settings-rate').value.trim();
    const burst = input('settings-burst').value.trim();
    // Sent as typed: the API checks them and names the field when one is wrong. Without a burst, the
    // API takes one second's worth.
    if (rate) body.ingestRateLimit = burst ? { perSecond: Number(rate), burst: Number(burst) } : { perSecond: Number(rate) };
    $('settings-result').textContent = 'saving…';
    await api.putSettings(selected.name, body);
    await loadSources(true);
    $('settings-result').textContent = 'saved';
  } catch (error) {
    if (!isUnauthorized(error)) $('settings-result').textContent = messageOf(error);
  }
}

async function toggleWebhooks() {
  const webhooks = selected && selected.destinations.Webhooks;
  if (!selected || !webhooks) return;
  try {
    await api.patchWebhooks(selected.name, { enabled: !webhooks.enabled });
    await loadSources(true);
  } catch (error) {
    if (!isUnauthorized(error)) notice(messageOf(error));
  }
}

async function testWebhooks() {
  if (!selected) return;
  $('wh-test-summary').textContent = 'sending';
  const tbody = $('wh-test-results');
  clear(tbody);
  try {
    // The options of the select are the API's types.
    const type = /** @type {import('../api.js').Body<'testWebhooks'>['type']} */ (select('wh-test-type').value);
    const result = await api.testWebhooks(selected.name, { type });
    $('wh-test-summary').textContent = result.delivered ? `delivered (${result.messageId})` : `not delivered (${result.messageId})`;
    for (const r of result.results) tbody.appendChild(row([r.url, r.status === null ? '-' : r.status, r.durationMs === null ? '-' : r.durationMs, r.error || '-']));
  } catch (error) {
    if (!isUnauthorized(error)) $('wh-test-summary').textContent = messageOf(error);
  }
}

async function rotateKey() {
  if (!selected) return;
  const grace = Number(input('key-grace').value);
  try {
    const issued = await api.rotateWriteKey(selected.name, { graceSeconds: grace });
    showKey(issued.source, issued.writeKey);
    await loadSources(true);
  } catch (error) {
    if (!isUnauthorized(error)) notice(messageOf(error));
  }
}

async function deleteSource() {
  if (!selected) return;
  const name = selected.name;
  if (!window.confirm(`Delete the source ${JSON.stringify(name)}? Its keys stop at once and its queued deliveries are failed.`)) return;
  try {
    const result = await api.deleteSource(name);
    notice(`Deleted ${result.name}: ${result.failedDeliveries} queued deliveries failed.`, 'info');
    closeEditor();
    await loadSources();
  } catch (error) {
    if (!isUnauthorized(error)) notice(messageOf(error));
  }
}

/** Wires the Sources forms and buttons. */
export function setUpSources() {
  $('source-create-form').addEventListener('submit', (event) => {
    event.preventDefault();
    void createSource();
  });
  button('key-copy').addEventListener('click', copyKey);
  $('wh-form').addEventListener('submit', (event) => {
    event.preventDefault();
    void saveWebhooks();
  });
  button('wh-toggle').addEventListener('click', toggleWebhooks);
  button('wh-test').addEventListener('click', testWebhooks);
  button('tf-test').addEventListener('click', () => void tryTransform());
  button('key-rotate').addEventListener('click', rotateKey);
  $('settings-form').addEventListener('submit', (event) => {
    event.preventDefault();
    void saveSettings();
  });
  button('source-delete').addEventListener('click', deleteSource);
}
