/**
 * Typed readers for options and config fields, one message policy for the whole package:
 * ``Expected `flushAt` to be an integer >= 1, got `0` (number)``. Each reader takes the field's
 * name (a dotted path in a config file) and the value after the caller applied its default with
 * `??`, and throws a `ConfigError` whose `field` is that name. Values appear as `values.ts`
 * shows them: strings that may be secrets or URLs with credentials are never repeated.
 */
import { ConfigError } from '../errors';
import { describeType, describeValue, isPlainObject, showValue } from './values';

/** Largest delay Node timers accept, in milliseconds (about 24.8 days). */
export const MAX_TIMER_MS = 2 ** 31 - 1;

function range(min: number, max: number): string {
  return max === Number.MAX_SAFE_INTEGER ? `>= ${min}` : `from ${min} to ${max}`;
}

/** An integer from `min` to `max` (inclusive). */
export function integerOption(name: string, value: unknown, min: number, max = Number.MAX_SAFE_INTEGER): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new ConfigError(`Expected \`${name}\` to be an integer ${range(min, max)}, got ${describeValue(value)}`, name);
  }
  return value;
}

/** A duration in whole milliseconds, from `min` to `max` (at most what a Node timer accepts). */
export function durationOption(name: string, value: unknown, min: number, max = MAX_TIMER_MS): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new ConfigError(`Expected \`${name}\` to be a duration in milliseconds, an integer ${range(min, max)}, got ${describeValue(value)}`, name);
  }
  return value;
}

export function booleanOption(name: string, value: unknown): boolean {
  if (typeof value !== 'boolean') {
    throw new ConfigError(`Expected \`${name}\` to be a boolean (true or false), got ${describeValue(value)}`, name);
  }
  return value;
}

/** One of a few fixed strings; the value is shown, since a short one cannot be a secret in this place. */
export function enumOption<T extends string>(name: string, value: unknown, allowed: readonly T[]): T {
  if (typeof value !== 'string' || !(allowed as readonly string[]).includes(value)) {
    throw new ConfigError(`Expected \`${name}\` to be one of ${allowed.map((a) => `"${a}"`).join(', ')}, got ${showValue(value)}`, name);
  }
  return value as T;
}

/** A string with at least one non-space character. `what` describes it, e.g. "the source's write key". */
export function stringOption(name: string, value: unknown, what?: string): string {
  if (typeof value !== 'string' || value.trim() === '') {
    const came = typeof value === 'string' && value !== '' ? 'an empty string (spaces only)' : describeValue(value);
    throw new ConfigError(`Expected \`${name}\` to be a non-empty string${what === undefined ? '' : ` (${what})`}, got ${came}`, name);
  }
  return value;
}

/** A non-empty string that may be a secret (a write key, a token): the message names its type, never its content. */
export function secretOption(name: string, value: unknown, what: string): string {
  if (typeof value !== 'string' || value === '') {
    throw new ConfigError(`Expected \`${name}\` to be a non-empty string (${what}), got ${describeType(value)}`, name);
  }
  return value;
}

/** A function, when given. */
export function functionOption<T>(name: string, value: T | undefined, signature: string): T | undefined {
  if (value !== undefined && typeof value !== 'function') {
    throw new ConfigError(`Expected \`${name}\` to be a function ${signature}, got ${describeValue(value)}`, name);
  }
  return value;
}

/** A plain object (not null, not an array). */
export function objectOption(name: string, value: unknown, what = 'an object'): Record<string, unknown> {
  if (!isPlainObject(value)) {
    throw new ConfigError(`Expected ${name === '' ? 'the options' : `\`${name}\``} to be ${what}, got ${describeValue(value)}`, name === '' ? undefined : name);
  }
  return value;
}

export interface UrlRule {
  /** Shown in the message, e.g. "https://hooks.example.com/in". */
  readonly example: string;
  /** Schemes allowed, with their colon. Default http: and https:. */
  readonly schemes?: readonly string[];
}

const HTTP_SCHEMES = ['http:', 'https:'];

/**
 * An absolute URL with a host, http or https unless `rule.schemes` says otherwise. The text is
 * never repeated in the message: a URL may carry credentials or a token. Only the scheme of a
 * wrong one is shown.
 */
export function urlOption(name: string, value: unknown, rule: UrlRule = { example: 'https://hooks.example.com/in' }): URL {
  const schemes = rule.schemes ?? HTTP_SCHEMES;
  const names = schemes.map((scheme) => scheme.slice(0, -1)).join(' or ');
  const expected = `Expected \`${name}\` to be an absolute ${names} URL such as "${rule.example}"`;
  if (typeof value !== 'string' || value.trim() === '') {
    const came = typeof value === 'string' && value !== '' ? 'an empty string (spaces only)' : describeValue(value);
    throw new ConfigError(`${expected}, got ${came}`, name);
  }
  let url: URL;
  try {
    url = new URL(value.trim());
  } catch {
    throw new ConfigError(`${expected}, got a malformed URL of ${value.length} characters (not shown: it may hold credentials)`, name);
  }
  if (!schemes.includes(url.protocol)) {
    throw new ConfigError(`${expected}, got the scheme ${showValue(url.protocol)}`, name);
  }
  if (url.hostname === '') throw new ConfigError(`${expected}, got a URL without a host`, name);
  return url;
}
