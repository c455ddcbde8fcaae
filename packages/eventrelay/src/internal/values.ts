/**
 * How values appear in error messages, one policy for the whole package: numbers and booleans
 * are shown, strings only where they cannot be secrets or user data (`showValue`), and never
 * in full. Objects and arrays are named by kind, never printed.
 */

/** A plain JSON-like object: not null, not an array. */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The value's kind, and its value for numbers and booleans; a string's length, never its text. */
export function describeValue(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return '`null`';
  if (Array.isArray(value)) return 'an array';
  switch (typeof value) {
    case 'number':
    case 'boolean':
    case 'bigint':
      return `\`${String(value)}\` (${typeof value})`;
    case 'string':
      return value === '' ? 'an empty string' : `a string of ${value.length} characters`;
    case 'object':
      return value instanceof Date ? 'a Date' : 'an object';
    default:
      return `a ${typeof value}`;
  }
}

/** Like `describeValue`, but shows a short string: for values known not to be secret (a URL scheme, a header name, an option). */
export function showValue(value: unknown): string {
  if (typeof value === 'string' && value !== '') {
    return value.length <= 40 ? `\`${JSON.stringify(value)}\` (string)` : `a string of ${value.length} characters`;
  }
  return describeValue(value);
}

/** The kind of a value and nothing of its content, for fields that may hold a secret (a number may be a PIN or a key). */
export function describeType(value: unknown): string {
  if (typeof value === 'string') return value === '' ? 'an empty string' : 'a string';
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return `a ${typeof value}`;
  return describeValue(value);
}
