import { ConfigError, describeValue, isPlainObject, MESSAGE_TYPES, showValue } from 'eventrelay/internal';
import { codePoints, MAX_EVENT_NAME, MAX_SCHEMA_NAMES } from './store/usage';
import type { FilteredBy, SourceSchema, WebhookFilter } from './store/contract';

/**
 * A source's schema controls (`blockedEvents`, `allowedEvents`, `blockedTypes`) and the per-URL
 * filters of its webhooks (`filter: { types, events }`): their checks, one set of rules for the
 * config file and the admin API, and their matching, compiled once per change of settings and
 * asked per call (routing) and per attempt (the destination). See docs/source-schema.md.
 */

export { MAX_EVENT_NAME, MAX_SCHEMA_NAMES };

/** The types a schema may block: the calls a source sends. */
export const SCHEMA_TYPES: readonly string[] = MESSAGE_TYPES;

/** The types a URL filter may name: the calls, and `delete` for deletion notices. */
export const FILTER_TYPES: readonly string[] = [...MESSAGE_TYPES, 'delete'];

function join(base: string, key: string): string {
  return base === '' ? key : `${base}.${key}`;
}

/**
 * Notes a problem found without a throw, so that the config file's check reports every unknown
 * field at once (the config's collector); absent: the problem is thrown.
 */
export type NoteProblem = (problem: ConfigError) => void;

/** An object with only `allowed` keys: each unknown key is noted (`note`), or thrown without one. */
function fields(value: unknown, field: string, allowed: readonly string[], what: string, note?: NoteProblem): Record<string, unknown> {
  if (!isPlainObject(value)) {
    throw new ConfigError(`Expected ${field === '' ? 'the body' : `\`${field}\``} to be ${what}, got ${describeValue(value)}`, field === '' ? undefined : field);
  }
  for (const name of Object.keys(value)) {
    if (!allowed.includes(name)) {
      const path = join(field, name);
      const problem = new ConfigError(`Unknown field \`${path}\`; expected one of ${allowed.map((k) => `\`${k}\``).join(', ')}`, path);
      if (note === undefined) throw problem;
      note(problem);
    }
  }
  return value;
}

/** A text to quote in a message: at most 60 characters of it. */
function quoted(name: string): string {
  return JSON.stringify(name.length > 60 ? `${name.slice(0, 60)}…` : name);
}

/** A list of track event names: 1 to MAX_EVENT_NAME characters each, at most MAX_SCHEMA_NAMES; repeats dropped. */
function eventNames(value: unknown, field: string, emptyOk: boolean): string[] {
  if (!Array.isArray(value)) throw new ConfigError(`Expected \`${field}\` to be a list of track event names, got ${describeValue(value)}`, field);
  if (value.length > MAX_SCHEMA_NAMES) {
    throw new ConfigError(`Expected \`${field}\` to hold at most ${MAX_SCHEMA_NAMES} event names, got ${value.length}`, field);
  }
  if (value.length === 0 && !emptyOk) {
    throw new ConfigError(`Expected \`${field}\` to name at least one event; leave it out to take every event`, field);
  }
  const seen = new Set<string>();
  value.forEach((name: unknown, i) => {
    const at = `${field}[${i}]`;
    if (typeof name !== 'string' || name === '') throw new ConfigError(`Expected \`${at}\` to be an event name (a non-empty string), got ${describeValue(name)}`, at);
    if (!name.isWellFormed()) throw new ConfigError(`Expected \`${at}\` to be well-formed Unicode text, got one with a lone surrogate`, at);
    if (codePoints(name, MAX_EVENT_NAME) > MAX_EVENT_NAME) {
      throw new ConfigError(`Expected \`${at}\` to be at most ${MAX_EVENT_NAME} characters, got ${[...name].length}`, at);
    }
    seen.add(name);
  });
  return [...seen];
}

/** A list of call types among `allowed`; repeats dropped. */
function typeList(value: unknown, field: string, allowed: readonly string[], emptyOk: boolean): string[] {
  const names = allowed.map((t) => `"${t}"`).join(', ');
  if (!Array.isArray(value)) throw new ConfigError(`Expected \`${field}\` to be a list of call types (${names}), got ${describeValue(value)}`, field);
  if (value.length === 0 && !emptyOk) throw new ConfigError(`Expected \`${field}\` to name at least one type; leave it out to take every type`, field);
  if (value.length > allowed.length * 4) throw new ConfigError(`Expected \`${field}\` to be a list of call types (${names}), got ${value.length} entries`, field);
  const seen = new Set<string>();
  value.forEach((type: unknown, i) => {
    const at = `${field}[${i}]`;
    if (typeof type !== 'string' || !allowed.includes(type)) throw new ConfigError(`Expected \`${at}\` to be one of ${names}, got ${showValue(type)}`, at);
    seen.add(type);
  });
  return [...seen];
}

/**
 * A source's `schema` (the config file's `sources[i].schema`, or the body of
 * `PUT /admin/sources/{name}/schema` with `field` ''): `blockedEvents`, `allowedEvents` (absent or
 * null: no tracking plan), `blockedTypes`. Undefined when it controls nothing. ConfigError names the field.
 */
export function parseSchema(value: unknown, field: string, note?: NoteProblem): SourceSchema | undefined {
  const raw = fields(value, field, ['blockedEvents', 'allowedEvents', 'blockedTypes'], '{ "blockedEvents", "allowedEvents", "blockedTypes" }', note);
  const blockedEvents = raw.blockedEvents === undefined ? [] : eventNames(raw.blockedEvents, join(field, 'blockedEvents'), true);
  const allowedEvents = raw.allowedEvents === undefined || raw.allowedEvents === null ? null : eventNames(raw.allowedEvents, join(field, 'allowedEvents'), true);
  const blockedTypes = raw.blockedTypes === undefined ? [] : typeList(raw.blockedTypes, join(field, 'blockedTypes'), SCHEMA_TYPES, true);
  if (blockedEvents.length === 0 && allowedEvents === null && blockedTypes.length === 0) return undefined;
  return { blockedEvents, allowedEvents, blockedTypes };
}

/** The controls as the API shows them: every list present (`allowedEvents` null without a plan). */
export function shownSchema(schema: SourceSchema | undefined): SourceSchema {
  return schema ?? { blockedEvents: [], allowedEvents: null, blockedTypes: [] };
}

/**
 * A webhook entry's `filter`: `types` (call types and `delete`) and `events` (track event names),
 * each absent for "every". Undefined for `{}`. ConfigError names the field.
 */
export function parseFilter(value: unknown, field: string, note?: NoteProblem): WebhookFilter | undefined {
  const raw = fields(value, field, ['types', 'events'], '{ "types"?: [call types], "events"?: [track event names] }', note);
  const types = raw.types === undefined ? undefined : typeList(raw.types, join(field, 'types'), FILTER_TYPES, false);
  const events = raw.events === undefined ? undefined : eventNames(raw.events, join(field, 'events'), false);
  if (events !== undefined && types !== undefined && !types.includes('track')) {
    throw new ConfigError(`\`${join(field, 'events')}\` names track events, but \`${join(field, 'types')}\` does not take "track": add it, or leave \`events\` out`, join(field, 'events'));
  }
  if (types === undefined && events === undefined) return undefined;
  return { ...(types === undefined ? {} : { types }), ...(events === undefined ? {} : { events }) };
}

/** A URL's filter, compiled: sets to look a call up in. */
export class UrlFilter {
  private readonly types: ReadonlySet<string> | undefined;
  private readonly events: ReadonlySet<string> | undefined;

  constructor(filter: WebhookFilter) {
    this.types = filter.types === undefined ? undefined : new Set(filter.types);
    this.events = filter.events === undefined ? undefined : new Set(filter.events);
  }

  /** Whether the URL gets a call of `type` (`event`: a track call's name). */
  matches(type: string, event: string | undefined): boolean {
    if (this.types !== undefined && !this.types.has(type)) return false;
    return this.events === undefined || type !== 'track' || (event !== undefined && this.events.has(event));
  }
}

/** What a URL's filter looks at in a webhook body: its type and, for a track message, its event. */
export interface MessageKind {
  readonly type: string;
  readonly event: string | undefined;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COLON = 0x3a;
const COMMA = 0x2c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;

/** The index after the closing quote of the JSON string that opens at `at`; -1 when it does not close. */
function stringEnd(text: string, at: number): number {
  for (let from = at + 1; ;) {
    const quote = text.indexOf('"', from);
    if (quote < 0) return -1;
    let slash = quote - 1;
    while (text.charCodeAt(slash) === BACKSLASH) slash--;
    // An even number of backslashes before it: the quote is not escaped.
    if ((quote - 1 - slash) % 2 === 0) return quote + 1;
    from = quote + 1;
  }
}

/** The index after the JSON value that starts at `at` (strings jumped over with indexOf); -1 when unsure. */
function valueEnd(text: string, at: number): number {
  const first = text.charCodeAt(at);
  if (first === QUOTE) return stringEnd(text, at);
  if (first !== OPEN_BRACE && first !== OPEN_BRACKET) {
    let i = at;
    while (i < text.length && text.charCodeAt(i) !== COMMA && text.charCodeAt(i) !== CLOSE_BRACE) i++;
    return i;
  }
  let depth = 0;
  for (let i = at; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      const end = stringEnd(text, i);
      if (end < 0) return -1;
      i = end - 1;
    } else if (c === OPEN_BRACE || c === OPEN_BRACKET) depth++;
    else if ((c === CLOSE_BRACE || c === CLOSE_BRACKET) && --depth === 0) return i + 1;
  }
  return -1;
}

/**
 * The type and (track) event of a webhook body: read by walking its top-level keys, nested values
 * skipped, without building the object (an attempt of a filtered destination asks it once). For
 * the forwarder's own serialization (`JSON.stringify`: no whitespace); any other text (spaces, an
 * escaped key, not an object) is read with `JSON.parse`. Undefined for a body without a string `type`.
 */
export function messageKind(body: string): MessageKind | undefined {
  const scanned = scanKind(body);
  if (scanned !== null) return scanned;
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const { type, event } = value as { type?: unknown; event?: unknown };
  return typeof type === 'string' ? { type, event: typeof event === 'string' ? event : undefined } : undefined;
}

/** `messageKind` of compact JSON; null when the text is not that (the caller parses it). Exported for its tests. */
export function scanKind(text: string): MessageKind | undefined | null {
  if (text.charCodeAt(0) !== OPEN_BRACE) return null;
  let type: unknown;
  let event: unknown;
  let i = 1;
  if (text.charCodeAt(i) === CLOSE_BRACE) return i + 1 === text.length ? undefined : null;
  for (;;) {
    if (text.charCodeAt(i) !== QUOTE) return null;
    const keyEnd = stringEnd(text, i);
    if (keyEnd < 0 || text.charCodeAt(keyEnd) !== COLON) return null;
    const key = text.slice(i + 1, keyEnd - 1);
    if (key.includes('\\')) return null;
    const start = keyEnd + 1;
    const end = valueEnd(text, start);
    if (end < 0 || end === start) return null;
    // The last of a key counts, as for JSON.parse.
    if (key === 'type' || key === 'event') {
      let value: unknown = null;
      if (text.charCodeAt(start) === QUOTE) {
        const raw = text.slice(start + 1, end - 1);
        value = raw.includes('\\') ? (JSON.parse(text.slice(start, end)) as string) : raw;
      }
      if (key === 'type') type = value;
      else event = value;
    }
    const next = text.charCodeAt(end);
    if (next === CLOSE_BRACE) {
      if (end + 1 !== text.length) return null;
      break;
    }
    if (next !== COMMA) return null;
    i = end + 1;
  }
  return typeof type === 'string' ? { type, event: typeof event === 'string' ? event : undefined } : undefined;
}

/** The filter of an entry, compiled; undefined for an entry without one. */
export function compileFilter(filter: WebhookFilter | undefined): UrlFilter | undefined {
  return filter === undefined ? undefined : new UrlFilter(filter);
}

/** Why no URL took a call. */
export const NO_URL_MATCHES: FilteredBy = { rule: 'url_filter', reason: 'No webhook URL of the source has a filter that takes this call' };

/**
 * What routing asks of a source's settings for each call: whether its schema blocks the call
 * (and which rule), and whether a URL's filter takes it. Made once per change of settings.
 */
export class SourceRules {
  private readonly blockedTypes: ReadonlyMap<string, FilteredBy>;
  private readonly blockedEvents: ReadonlySet<string> | undefined;
  private readonly allowedEvents: ReadonlySet<string> | undefined;
  /** The URLs' filters; undefined when some URL takes every call. */
  private readonly filters: readonly UrlFilter[] | undefined;

  constructor(schema: SourceSchema | undefined, filters: readonly (WebhookFilter | undefined)[]) {
    this.blockedTypes = new Map(
      (schema?.blockedTypes ?? []).map((type) => [type, { rule: 'blocked_type', reason: `The source's schema blocks ${type} calls (\`blockedTypes\`)` }]),
    );
    this.blockedEvents = schema === undefined || schema.blockedEvents.length === 0 ? undefined : new Set(schema.blockedEvents);
    this.allowedEvents = schema?.allowedEvents === null || schema === undefined ? undefined : new Set(schema.allowedEvents);
    this.filters = filters.length === 0 || filters.some((f) => f === undefined) ? undefined : filters.map((f) => new UrlFilter(f!));
  }

  /** Whether these rules can stop anything: if not, routing need not ask. */
  get empty(): boolean {
    return this.blockedTypes.size === 0 && this.blockedEvents === undefined && this.allowedEvents === undefined && this.filters === undefined;
  }

  /** The schema control that blocks a call of `type` (`event`: a track call's name), if one does. */
  blocked(type: string, event: string | undefined): FilteredBy | undefined {
    if (this.blockedTypes.size > 0) {
      const byType = this.blockedTypes.get(type);
      if (byType !== undefined) return byType;
    }
    if (type !== 'track' || event === undefined) return undefined;
    if (this.blockedEvents?.has(event) === true) {
      return { rule: 'blocked_event', reason: `The source's schema blocks the event ${quoted(event)} (\`blockedEvents\`)` };
    }
    if (this.allowedEvents !== undefined && !this.allowedEvents.has(event)) {
      return { rule: 'tracking_plan', reason: `The event ${quoted(event)} is not in the source's tracking plan (\`allowedEvents\`)` };
    }
    return undefined;
  }

  /** Whether a URL's filter takes a call of `type` (`delete` for a deletion notice). */
  routed(type: string, event: string | undefined): boolean {
    return this.filters === undefined || this.filters.some((f) => f.matches(type, event));
  }
}

/** The rules of a source's settings; undefined when they stop nothing (no control, no filter). */
export function compileRules(
  schema: SourceSchema | undefined,
  webhooks: { readonly webhooks: readonly { readonly filter?: WebhookFilter }[] } | undefined,
): SourceRules | undefined {
  const rules = new SourceRules(schema, webhooks?.webhooks.map((w) => w.filter) ?? []);
  return rules.empty ? undefined : rules;
}
