import { InvalidArgumentError, PayloadTooLargeError } from '../errors';

/**
 * A request body exactly as it arrived: its text, or its bytes (a `Buffer`, a `Uint8Array`,
 * any other typed array or `DataView`, or an `ArrayBuffer`). Never parsed JSON: parsing and
 * re-serializing changes the bytes (whitespace, key order, escapes), so the signature of the
 * sender can no longer be checked.
 */
export type WebhookBody = string | ArrayBuffer | ArrayBufferView;

/** What `Hmac#update` accepts: a string or any typed array / DataView. */
type BodyInput = string | NodeJS.ArrayBufferView;

const EXPECTED = 'Expected `rawBody` to be the raw request body (a string, Buffer, Uint8Array or ArrayBuffer)';

/**
 * The body in a form that `Hmac#update` and Web Crypto take as is: strings stay strings
 * (hashed as UTF-8), views stay views, an `ArrayBuffer` gets a view. Nothing is copied.
 * Throws `InvalidArgumentError` for anything else, which is always a programming mistake.
 */
export function toBodyInput(rawBody: unknown): BodyInput {
  if (typeof rawBody === 'string' || ArrayBuffer.isView(rawBody)) return rawBody as BodyInput;
  if (isArrayBuffer(rawBody)) return new Uint8Array(rawBody);
  throw rawBodyError(rawBody);
}

/** The body as bytes, for Web Crypto and decoding. Strings are encoded as UTF-8. */
export function toBodyBytes(rawBody: unknown): ArrayBufferView {
  const input = toBodyInput(rawBody);
  return typeof input === 'string' ? encoder.encode(input) : input;
}

const encoder = new TextEncoder();

function isArrayBuffer(value: unknown): value is ArrayBuffer {
  // The tag check also accepts an ArrayBuffer made in another realm (vm, worker, test runner).
  return value instanceof ArrayBuffer || Object.prototype.toString.call(value) === '[object ArrayBuffer]';
}

function rawBodyError(rawBody: unknown): InvalidArgumentError {
  if (rawBody === undefined || rawBody === null) {
    return new InvalidArgumentError(
      `${EXPECTED}, got ${String(rawBody)}. If a body parser such as express.json() ran first, ` +
      'it consumed the body: mount the webhook route before it (or use express.raw()), or read ' +
      'the body yourself with `await request.text()` in a Fetch handler.',
      'rawBody',
    );
  }
  if (typeof rawBody === 'object') {
    return new InvalidArgumentError(
      `${EXPECTED}, got ${Array.isArray(rawBody) ? 'an array' : 'an object'}: pass the raw request body, not parsed JSON. ` +
      'Serializing it again changes the bytes, so the signature cannot be checked. Read the body ' +
      'as text or bytes before any JSON parser runs (see docs/receiving-webhooks.md).',
      'rawBody',
    );
  }
  return new InvalidArgumentError(`${EXPECTED}, got ${typeof rawBody}.`, 'rawBody');
}

/** The error for a body over `maxBodySize`; `size` may be a lower bound when reading stopped early. */
export function bodyTooLarge(size: number, limit: number): PayloadTooLargeError {
  return new PayloadTooLargeError(`The body has ${size} bytes or more, more than maxBodySize (${limit}).`, size, limit);
}
