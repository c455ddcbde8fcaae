// @ts-check
/* Schema: what each source sends (call types and track event names, over every instance), a Block
 * or Allow button on each, and the usage per day and per source. */
import { getSchema, getUsage, isUnauthorized, messageOf, putSchema } from '../api.js';
import { $, button, clear, el, emptyRow, row, select } from '../dom.js';

/** @typedef {import('../api.js').ShownSchema} ShownSchema */
/** @typedef {{ received: number, filtered: number, rejected: number, delivered: number, failed: number }} Counts */
/**
 * A call type (`{ type }`) or a track event's name (`{ event }`).
 * @typedef {{ type: string, event?: undefined } | { event: string, type?: undefined }} Blockable
 */

/** The schema shown now, as the API answered it. @type {ShownSchema | null} */
let schema = null;

/**
 * @param {string} first the day or the source
 * @param {Counts} counts
 */
function usageRow(first, counts) {
  return row([first, counts.received, counts.filtered, counts.rejected, counts.delivered, counts.failed]);
}

/**
 * Why the controls block an event or a type, in words; '' when they do not.
 * @param {ShownSchema} controls
 * @param {string} type
 * @param {string | undefined} event
 */
function blockedBy(controls, type, event) {
  if (controls.blockedTypes.includes(type)) return 'blocked type';
  if (type !== 'track') return '';
  if (event !== undefined && controls.blockedEvents.includes(event)) return 'blocked';
  if (controls.allowedEvents !== null && (event === undefined || !controls.allowedEvents.includes(event))) return 'not in the tracking plan';
  return '';
}

/** Shows the schema and the usage of the source picked. */
export async function loadSchema() {
  const name = select('schema-source').value;
  $('schema-result').textContent = '';
  await loadUsage(name);
  if (!name) {
    schema = null;
    clear($('schema-events'));
    clear($('schema-controls'));
    return;
  }
  let answer;
  try {
    answer = await getSchema(name);
  } catch (error) {
    if (!isUnauthorized(error)) $('schema-result').textContent = messageOf(error);
    return;
  }
  schema = answer;
  const controls = $('schema-controls');
  clear(controls);
  const rows = [
    ['blocked events', answer.blockedEvents.length ? answer.blockedEvents.join(', ') : 'none'],
    ['tracking plan', answer.allowedEvents === null ? 'none: every track event may be forwarded' : `${answer.allowedEvents.length} events; others are blocked`],
  ];
  for (const [label, value] of rows) {
    controls.appendChild(el('dt', label));
    controls.appendChild(el('dd', value));
  }
  controls.appendChild(el('dt', 'blocked types'));
  const types = el('dd', answer.blockedTypes.length ? undefined : 'none');
  for (const type of answer.blockedTypes) {
    types.appendChild(el('span', `${type} `));
    types.appendChild(toggleButton('Allow', { type }));
    types.appendChild(document.createTextNode(' '));
  }
  controls.appendChild(types);
  const tbody = $('schema-events');
  clear(tbody);
  for (const e of answer.events) {
    const tr = row([e.type, e.event === undefined ? '-' : e.event, e.count, e.firstSeen, e.lastSeen]);
    tr.dataset.type = e.type;
    if (e.event !== undefined) tr.dataset.event = e.event;
    const why = blockedBy(answer, e.type, e.event);
    const state = el('td');
    state.appendChild(el('span', why ? why : 'yes', `badge ${why ? 'failed' : 'delivered'}`));
    tr.appendChild(state);
    const td = el('td');
    const toggle = toggleButton(why ? 'Allow' : 'Block', e.event === undefined ? { type: e.type } : { event: e.event });
    // A track event blocked with its whole type is allowed with the type, above.
    if (why === 'blocked type' && e.event !== undefined) toggle.disabled = true;
    td.appendChild(toggle);
    tr.appendChild(td);
    tbody.appendChild(tr);
  }
  if (answer.events.length === 0) tbody.appendChild(emptyRow('Nothing received from this source yet.', 7));
  const other = answer.otherEvents;
  $('schema-other').hidden = other === null;
  $('schema-other').textContent = other === null ? '' : `${other.count} track calls whose names are not listed (past the names kept, or too long), last at ${other.lastSeen}.`;
}

/**
 * A button that blocks or allows an event name or a call type.
 * @param {'Block' | 'Allow'} label
 * @param {Blockable} what
 */
function toggleButton(label, what) {
  const node = el('button', label, 'schema-toggle');
  node.type = 'button';
  node.addEventListener('click', () => toggle(label === 'Block', what, node));
  return node;
}

/**
 * Blocks (`block`) or allows an event name or a call type: the source's controls, sent whole.
 * @param {boolean} block
 * @param {Blockable} what
 * @param {HTMLButtonElement} node the button, off while the change is sent
 */
async function toggle(block, what, node) {
  if (!schema) return;
  const name = schema.source;
  /** @type {Required<import('../api.js').SchemaInput>} */
  const next = {
    blockedEvents: [...schema.blockedEvents],
    allowedEvents: schema.allowedEvents === null ? null : [...schema.allowedEvents],
    blockedTypes: [...schema.blockedTypes],
  };
  /**
   * @param {string[]} list
   * @param {string} item
   */
  const without = (list, item) => list.filter((x) => x !== item);
  if (what.type !== undefined) {
    next.blockedTypes = block ? [...without(next.blockedTypes, what.type), what.type] : without(next.blockedTypes, what.type);
  } else if (block) {
    next.blockedEvents = [...without(next.blockedEvents, what.event), what.event];
  } else {
    next.blockedEvents = without(next.blockedEvents, what.event);
    // Allowed under a tracking plan: the plan takes it in.
    if (next.allowedEvents !== null && !next.allowedEvents.includes(what.event)) next.allowedEvents.push(what.event);
  }
  node.disabled = true;
  try {
    await putSchema(name, next);
    if (select('schema-source').value === name) await loadSchema();
    $('schema-result').textContent = `${block ? 'blocked' : 'allowed'} ${what.event !== undefined ? what.event : `${what.type} calls`}`;
  } catch (error) {
    node.disabled = false;
    if (!isUnauthorized(error)) $('schema-result').textContent = messageOf(error);
  }
}

/**
 * The usage of every source, and per day of the one picked.
 * @param {string} name
 */
async function loadUsage(name) {
  let all;
  try {
    all = await getUsage();
  } catch (error) {
    if (!isUnauthorized(error)) $('schema-result').textContent = messageOf(error);
    return;
  }
  const sources = $('usage-sources');
  clear(sources);
  for (const s of all.sources) sources.appendChild(usageRow(s.source, s));
  $('usage-name').textContent = name || '-';
  const days = $('usage-days');
  clear(days);
  const mine = all.sources.find((s) => s.source === name);
  if (!mine) return;
  for (const d of mine.days) days.appendChild(usageRow(d.day, d));
}

/** Wires the source picker and Refresh. */
export function setUpSchema() {
  select('schema-source').addEventListener('change', loadSchema);
  button('schema-refresh').addEventListener('click', loadSchema);
}
