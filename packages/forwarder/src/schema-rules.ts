import { Type } from '@sinclair/typebox';
import { ConfigError, MESSAGE_TYPES } from 'eventrelay/internal';
import { EXPECTED, lazyCheck } from './validation/check';
import type { Problem } from './validation/check';
import { Enum } from './validation/kinds';
import { MAX_EVENT_NAME, MAX_SCHEMA_NAMES } from './store/usage';
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

/** A track event name, as schema controls and filters name one. */
const EventName = Type.String({ minLength: 1, maxLength: MAX_EVENT_NAME, [EXPECTED]: `an event name (a non-empty string) of at most ${MAX_EVENT_NAME} characters` });

/** Which calls a webhook URL gets: a URL's `filter` in the config file and the admin API. */
export const WebhookFilterSchema = Type.Object(
  {
    types: Type.Optional(Type.Array(Enum(FILTER_TYPES), { minItems: 1, maxItems: FILTER_TYPES.length * 4, description: 'Call types, and `delete` for deletion notices; left out: every type.' })),
    events: Type.Optional(Type.Array(EventName, { minItems: 1, maxItems: MAX_SCHEMA_NAMES, description: 'Track event names; left out: every event.' })),
  },
  { additionalProperties: false, [EXPECTED]: '{ "types"?: [call types], "events"?: [track event names] }' },
);

/** A source's schema controls: `sources[i].schema` in the config file, and the body of `PUT /admin/sources/{name}/schema`. */
export const SourceSchemaInput = Type.Object(
  {
    blockedEvents: Type.Optional(Type.Array(EventName, { maxItems: MAX_SCHEMA_NAMES })),
    allowedEvents: Type.Optional(Type.Union([Type.Array(EventName, { maxItems: MAX_SCHEMA_NAMES }), Type.Null()])),
    blockedTypes: Type.Optional(Type.Array(Enum(SCHEMA_TYPES), { maxItems: SCHEMA_TYPES.length * 4 })),
  },
  { additionalProperties: false, [EXPECTED]: '{ "blockedEvents", "allowedEvents", "blockedTypes" }' },
);

/** A text to quote in a message: at most 60 characters of it. */
function quoted(name: string): string {
  return JSON.stringify(name.length > 60 ? `${name.slice(0, 60)}…` : name);
}

const checkFilter = lazyCheck(WebhookFilterSchema);
const checkSchema = lazyCheck(SourceSchemaInput);

/** Throws the problems found, if any: one ConfigError, or one listing them all in `problems`. The top (field '') has none. */
function refuse(found: readonly Problem[]): void {
  if (found.length === 0) return;
  const errors = found.map((p) => new ConfigError(p.message, p.field === '' ? undefined : p.field));
  if (errors.length === 1) throw errors[0]!;
  const lines = errors.map((e) => `- ${e.field === undefined ? 'in the body' : `at ${e.field}`}: ${e.message}`);
  throw new ConfigError(`${errors.length} problems:\n${lines.join('\n')}`, errors[0]!.field, errors);
}

/** Names the schema took: each must be well-formed text (no lone surrogate); repeats are dropped. */
function names(list: readonly string[] | undefined, field: string, found: Problem[]): string[] | undefined {
  if (list === undefined) return undefined;
  list.forEach((name, i) => {
    if (!name.isWellFormed()) found.push({ field: `${field}[${i}]`, message: `Expected \`${field}[${i}]\` to be well-formed Unicode text, got one with a lone surrogate` });
  });
  return [...new Set(list)];
}

/**
 * A source's `schema` (the config file's `sources[i].schema`, or the body of
 * `PUT /admin/sources/{name}/schema` with `field` ''): `blockedEvents`, `allowedEvents` (absent or
 * null: no tracking plan), `blockedTypes`, checked by their schema, every problem at once.
 * Undefined when it controls nothing. ConfigError names the field.
 */
export function parseSchema(value: unknown, field: string): SourceSchema | undefined {
  refuse(checkSchema(value, field));
  const raw = value as { blockedEvents?: string[]; allowedEvents?: string[] | null; blockedTypes?: string[] };
  const found: Problem[] = [];
  const blockedEvents = names(raw.blockedEvents, join(field, 'blockedEvents'), found) ?? [];
  const allowedEvents = names(raw.allowedEvents ?? undefined, join(field, 'allowedEvents'), found) ?? null;
  const blockedTypes = [...new Set(raw.blockedTypes ?? [])];
  refuse(found);
  if (blockedEvents.length === 0 && allowedEvents === null && blockedTypes.length === 0) return undefined;
  return { blockedEvents, allowedEvents, blockedTypes };
}

/** The controls as the API shows them: every list present (`allowedEvents` null without a plan). */
export function shownSchema(schema: SourceSchema | undefined): SourceSchema {
  return schema ?? { blockedEvents: [], allowedEvents: null, blockedTypes: [] };
}

/**
 * A webhook entry's `filter`: `types` (call types and `delete`) and `events` (track event names),
 * each absent for "every", checked by its schema, every problem at once. Undefined for `{}`.
 * ConfigError names the field.
 */
export function parseFilter(value: unknown, field: string): WebhookFilter | undefined {
  refuse(checkFilter(value, field));
  const raw = value as { types?: string[]; events?: string[] };
  const found: Problem[] = [];
  const types = raw.types === undefined ? undefined : [...new Set(raw.types)];
  const events = names(raw.events, join(field, 'events'), found);
  if (events !== undefined && types !== undefined && !types.includes('track')) {
    const at = join(field, 'events');
    found.push({ field: at, message: `\`${at}\` names track events, but \`${join(field, 'types')}\` does not take "track": add it, or leave \`events\` out` });
  }
  refuse(found);
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
