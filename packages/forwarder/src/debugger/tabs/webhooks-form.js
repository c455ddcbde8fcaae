// @ts-check
/* The Webhooks form of the Sources editor, and the bodies it makes: the whole destination for a
 * source without one (PUT), or only what was edited (PATCH). The secret and the header values are
 * never shown again: a header set shows "(set, not shown)", and left so, it stays. */
import { $, input, select, textarea } from '../dom.js';

/** @typedef {import('../api.js').Webhooks} Webhooks */
/** @typedef {import('../api.js').WebhooksInput} WebhooksInput */
/** @typedef {import('../api.js').WebhooksChange} WebhooksChange */
/** @typedef {Omit<WebhooksInput['webhooks'][number], 'url'> & { url: string }} NewUrl (the page sends URLs as text; `{ env }` is the config file's) */
/** @typedef {NonNullable<WebhooksInput['signing']>} Signing */
/** @typedef {NonNullable<WebhooksInput['ordering']>} Ordering */
/** @typedef {NonNullable<Webhooks['webhooks'][number]['filter']>} Filter */
/** @typedef {NonNullable<NewUrl['batch']>} Batch */

/**
 * A URL's line of the form, as typed.
 * @typedef {object} FormRow
 * @property {string} url
 * @property {string} headers "Name: value" lines
 * @property {string} rate
 * @property {string[]} types
 * @property {string[]} events
 * @property {string} transform the code of its transform; '' for none
 * @property {[string, string, string]} batch its batch's max events, max bytes and max wait (ms); all '' for none
 */
/**
 * The form, as typed.
 * @typedef {object} FormState
 * @property {FormRow[]} rows
 * @property {string} secret
 * @property {boolean} removeSecret
 * @property {boolean} enabled
 * @property {Signing} signing
 * @property {Ordering} ordering
 */

/** URLs a destination has at most: the form's lines. */
const URLS = 5;

/** What a header line shows in place of a value that is set: values are never shown again. */
const HIDDEN_VALUE = '(set, not shown)';

/**
 * The Webhooks form as the source has it now; what it holds then is what a save compares with.
 * @type {{ webhooks: Webhooks | null, form: FormState } | null}
 */
let formBase = null;

/**
 * Fills the form with a source's destination (null: none yet).
 * @param {Webhooks | null} webhooks
 */
export function fillWebhooksForm(webhooks) {
  const urls = webhooks === null ? [] : webhooks.webhooks;
  for (let i = 0; i < URLS; i++) {
    const w = urls[i];
    // The URL as the API shows it (no credentials, no query): left as it is, the stored one stays.
    input(`wh-url-${i}`).value = w ? w.url : '';
    const headers = w ? w.headerNames.map((name) => `${name}: ${HIDDEN_VALUE}`) : [];
    textarea(`wh-headers-${i}`).value = headers.join('\n');
    textarea(`wh-headers-${i}`).rows = Math.max(1, headers.length);
    input(`wh-rate-${i}`).value = w && w.rateLimit ? String(w.rateLimit.perSecond) : '';
    input(`wh-types-${i}`).value = w && w.filter && w.filter.types ? w.filter.types.join(', ') : '';
    textarea(`wh-events-${i}`).value = w && w.filter && w.filter.events ? w.filter.events.join('\n') : '';
    textarea(`wh-transform-${i}`).value = w && w.transform ? w.transform.code : '';
    textarea(`wh-transform-${i}`).rows = w && w.transform ? Math.min(12, w.transform.code.split('\n').length) : 1;
    timeouts[i] = w && w.transform ? w.transform.timeoutMs : undefined;
    const batch = w ? w.batch : null;
    input(`wh-batch-events-${i}`).value = batch ? String(batch.maxEvents) : '';
    input(`wh-batch-bytes-${i}`).value = batch ? String(batch.maxBytes) : '';
    input(`wh-batch-wait-${i}`).value = batch ? String(batch.maxWaitMs) : '';
  }
  const secretSet = webhooks !== null && webhooks.hasSharedSecret;
  input('wh-secret').value = '';
  input('wh-secret').placeholder = secretSet ? 'empty: keep the secret set' : 'empty: unsigned';
  $('wh-secret-state').textContent = webhooks === null ? '' : secretSet ? 'secret set (not shown)' : 'no secret: unsigned';
  input('wh-secret-remove').checked = false;
  $('wh-secret-remove-label').hidden = !secretSet;
  input('wh-enabled').checked = webhooks === null ? true : webhooks.enabled;
  select('wh-signing').value = webhooks === null ? 'x-signature' : webhooks.signing;
  select('wh-ordering').value = webhooks === null ? 'none' : webhooks.ordering || 'none';
  $('wh-heading-note').textContent =
    webhooks === null
      ? '(none yet: a save sets them; the secret and header values are never shown again)'
      : '(a save changes only what you edit here; the secret and header values are never shown again)';
  formBase = { webhooks, form: readWebhooksForm() };
}

/** @returns {FormState} */
function readWebhooksForm() {
  /** @type {FormRow[]} */
  const rows = [];
  for (let i = 0; i < URLS; i++) {
    rows.push({
      url: input(`wh-url-${i}`).value.trim(),
      headers: textarea(`wh-headers-${i}`).value,
      rate: input(`wh-rate-${i}`).value.trim(),
      types: input(`wh-types-${i}`).value.split(/[\s,]+/).filter(Boolean),
      events: textarea(`wh-events-${i}`).value.split('\n').filter((line) => line !== ''),
      transform: textarea(`wh-transform-${i}`).value,
      batch: [input(`wh-batch-events-${i}`).value.trim(), input(`wh-batch-bytes-${i}`).value.trim(), input(`wh-batch-wait-${i}`).value.trim()],
    });
  }
  return {
    rows,
    secret: input('wh-secret').value,
    removeSecret: input('wh-secret-remove').checked,
    enabled: input('wh-enabled').checked,
    // The options of the selects are the API's values.
    signing: /** @type {Signing} */ (select('wh-signing').value),
    ordering: /** @type {Ordering} */ (select('wh-ordering').value),
  };
}

/**
 * A URL's filter in words, for the editor's list.
 * @param {Filter | null | undefined} filter
 */
export function filterText(filter) {
  if (!filter) return '';
  const parts = [];
  if (filter.types) parts.push(`types ${filter.types.join(', ')}`);
  if (filter.events) parts.push(`${filter.events.length} track event${filter.events.length === 1 ? '' : 's'}`);
  return `; only ${parts.join(', ')}`;
}

/**
 * "Name: value" lines into a headers object; a line without a colon is an error.
 * @param {string} text
 * @param {number} index the URL's
 */
function parseHeaders(text, index) {
  /** @type {Record<string, string>} */
  const headers = {};
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    const colon = line.indexOf(':');
    if (colon <= 0) throw new Error(`URL ${index + 1}: write each header as "Name: value"`);
    headers[line.slice(0, colon).trim()] = line.slice(colon + 1).trim();
  }
  return headers;
}

/**
 * A URL's rate limit as the API takes it; undefined for none.
 * @param {FormRow} row
 */
function rateOf(row) {
  // Sent as typed: the API checks it and names the field when it is wrong.
  return row.rate ? { perSecond: Number(row.rate) } : undefined;
}

/**
 * A URL's filter as the API takes it; undefined for none.
 * @param {FormRow} row
 */
function filterOf(row) {
  if (!row.types.length && !row.events.length) return undefined;
  /** @type {Filter} */
  const filter = {};
  if (row.types.length) filter.types = row.types;
  if (row.events.length) filter.events = row.events;
  return filter;
}

/**
 * A URL's batch as the API takes it; undefined for none (all three boxes empty). A box left empty
 * is left out: the API fills `maxBytes` and `maxWaitMs`, and names `maxEvents` when it is missing.
 * @param {FormRow} row
 */
function batchOf(row) {
  const [events, bytes, wait] = row.batch;
  if (!events && !bytes && !wait) return undefined;
  // Sent as typed: the API checks the ranges and names the field when one is wrong.
  /** @type {Partial<Batch>} */
  const batch = {};
  if (events) batch.maxEvents = Number(events);
  if (bytes) batch.maxBytes = Number(bytes);
  if (wait) batch.maxWaitMs = Number(wait);
  return /** @type {Batch} */ (batch);
}

/** Each URL's `timeoutMs` as the source has it, kept when its code is edited here. @type {(number | undefined)[]} */
const timeouts = [];

/**
 * A URL's transform as the API takes it; undefined for none.
 * @param {FormRow} row
 * @param {number} index
 */
function transformOf(row, index) {
  if (row.transform.trim() === '') return undefined;
  const timeoutMs = timeouts[index];
  return timeoutMs === undefined ? { code: row.transform } : { code: row.transform, timeoutMs };
}

/**
 * The code in a URL's transform box, as typed ('' for none).
 * @param {number} index
 */
export function transformCode(index) {
  return textarea(`wh-transform-${index}`).value;
}

/**
 * A URL added: all of it.
 * @param {FormRow} row
 * @param {Record<string, string>} headers
 * @param {number} index
 * @returns {NewUrl}
 */
function newUrl(row, headers, index) {
  /** @type {NewUrl} */
  const entry = { url: row.url };
  const transform = transformOf(row, index);
  if (transform) entry.transform = transform;
  if (Object.keys(headers).length) entry.headers = headers;
  const rate = rateOf(row);
  if (rate) entry.rateLimit = rate;
  const filter = filterOf(row);
  if (filter) entry.filter = filter;
  const batch = batchOf(row);
  if (batch) entry.batch = batch;
  return entry;
}

/**
 * The whole destination from the form, for a source without one yet (PUT).
 * @param {FormState} form
 * @returns {WebhooksInput}
 */
function wholeWebhooks(form) {
  /** @type {NewUrl[]} */
  const webhooks = [];
  form.rows.forEach((row, i) => {
    const headers = parseHeaders(row.headers, i);
    if (!row.url) return;
    webhooks.push(newUrl(row, headers, i));
  });
  /** @type {WebhooksInput} */
  const body = { enabled: form.enabled, signing: form.signing, ordering: form.ordering, webhooks };
  if (form.secret) body.sharedSecret = form.secret;
  return body;
}

/**
 * The changes between the form as filled and as it is now (PATCH): untouched fields are left out.
 * @param {{ webhooks: Webhooks, form: FormState }} base
 * @param {FormState} form
 * @returns {WebhooksChange}
 */
function changedWebhooks(base, form) {
  /** @type {WebhooksChange} */
  const body = {};
  const before = base.form;
  const shown = base.webhooks.webhooks;
  let urlsChanged = false;
  /** @type {NonNullable<WebhooksChange['webhooks']>} */
  const webhooks = [];
  form.rows.forEach((row, i) => {
    const was = before.rows[i];
    const headers = parseHeaders(row.headers, i);
    const current = shown[i];
    if (current === undefined || was === undefined) {
      if (!row.url) return;
      urlsChanged = true;
      for (const [name, value] of Object.entries(headers)) {
        if (value === HIDDEN_VALUE) throw new Error(`URL ${i + 1}: write the value of the header ${name}`);
      }
      webhooks.push(newUrl(row, headers, i));
      return;
    }
    // A URL set now and emptied here: removed.
    if (!row.url) {
      urlsChanged = true;
      return;
    }
    /** @type {Extract<NonNullable<WebhooksChange['webhooks']>[number], { from: number }>} */
    const entry = { from: i };
    if (row.url !== was.url) entry.url = row.url;
    /** @type {Record<string, string | null>} */
    const change = {};
    const kept = new Set();
    const names = current.headerNames;
    for (const [name, value] of Object.entries(headers)) {
      const existing = names.find((n) => n.toLowerCase() === name.toLowerCase());
      if (value === HIDDEN_VALUE) {
        if (existing === undefined) throw new Error(`URL ${i + 1}: write the value of the header ${name}`);
        kept.add(existing);
      } else {
        change[name] = value;
        if (existing !== undefined) kept.add(existing);
      }
    }
    for (const name of names) if (!kept.has(name)) change[name] = null;
    if (Object.keys(change).length) entry.headers = change;
    if (row.rate !== was.rate) entry.rateLimit = rateOf(row) || null;
    if (row.types.join() !== was.types.join() || row.events.join('\n') !== was.events.join('\n')) entry.filter = filterOf(row) || null;
    if (row.transform !== was.transform) entry.transform = transformOf(row, i) || null;
    if (row.batch.join() !== was.batch.join()) entry.batch = batchOf(row) || null;
    if (Object.keys(entry).length > 1) urlsChanged = true;
    webhooks.push(entry);
  });
  // Dropped or reordered URLs count too: the list goes whole whenever any of it changed.
  if (urlsChanged || webhooks.length !== shown.length) body.webhooks = webhooks;
  if (form.secret) body.sharedSecret = form.secret;
  else if (form.removeSecret) body.sharedSecret = null;
  if (form.enabled !== before.enabled) body.enabled = form.enabled;
  if (form.signing !== before.signing) body.signing = form.signing;
  if (form.ordering !== before.ordering) body.ordering = form.ordering;
  return body;
}

/**
 * What saving the form sends: the whole destination (PUT) for a source without one, what was
 * edited (PATCH) for one that has it, or null when nothing was edited. Throws on a header line
 * that is not "Name: value", and on a new header left with the hidden value.
 * @returns {{ method: 'PUT', body: WebhooksInput } | { method: 'PATCH', body: WebhooksChange } | null}
 */
export function webhooksSave() {
  if (formBase === null) return null;
  const form = readWebhooksForm();
  if (formBase.webhooks === null) return { method: 'PUT', body: wholeWebhooks(form) };
  const body = changedWebhooks({ webhooks: formBase.webhooks, form: formBase.form }, form);
  return Object.keys(body).length === 0 ? null : { method: 'PATCH', body };
}
