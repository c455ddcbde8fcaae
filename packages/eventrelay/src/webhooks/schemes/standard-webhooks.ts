import { toBodyBytes, toBodyInput } from '../body';
import type { WebhookBody } from '../body';
import { getHeader } from '../headers';
import type { HeadersLike } from '../headers';
import { nodeCrypto, standardSignatures } from '../../internal/hmac';
import { durationOption } from '../../internal/options';
import { assertSecret } from '../secret';
import type { WebhookSecret } from '../secret';
import type { KeyObject, webcrypto } from 'node:crypto';
import { ConfigError, EventRelayError, InvalidArgumentError, SignatureVerificationError, WebhookTimestampError } from '../../errors';

/**
 * Standard Webhooks (https://www.standardwebhooks.com): the message id and a timestamp are
 * signed together with the body, so a receiver can refuse a captured request replayed later.
 * `webhook-signature` is `v1,` + base64 HMAC-SHA256 of `${id}.${timestamp}.${body}`; several
 * space-separated signatures while a secret rotates.
 */
export const WEBHOOK_ID_HEADER = 'webhook-id';
export const WEBHOOK_TIMESTAMP_HEADER = 'webhook-timestamp';
export const WEBHOOK_SIGNATURE_HEADER = 'webhook-signature';

/** How far `webhook-timestamp` may be from the receiver's clock, in ms: 5 minutes, the standard's value. */
export const STANDARD_WEBHOOKS_TOLERANCE = 5 * 60 * 1000;

/** The three headers a Standard Webhooks request carries (a type, not an interface, so it is a `HeadersLike`). */
export type StandardWebhookHeaders = {
  readonly 'webhook-id': string;
  readonly 'webhook-timestamp': string;
  readonly 'webhook-signature': string;
};

export interface SignStandardWebhookOptions {
  /** The message id: the same on every retry of one message, so receivers can drop duplicates. */
  readonly id: string;
  /** When this attempt is sent. Default: now. */
  readonly timestamp?: Date;
}

export interface VerifyStandardWebhookOptions {
  /** How far `webhook-timestamp` may be from `now`, either way, in ms. Default 300000 (5 minutes). */
  readonly tolerance?: number;
  /** The receiver's time, epoch ms. Default `Date.now()`. */
  readonly now?: number;
}

const SECRET_PREFIX = 'whsec_';
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
/** One `v1` signature: 32 bytes of HMAC-SHA256 are 44 base64 characters, the last one `=`. */
const V1_SIGNATURE = /^v1,([A-Za-z0-9+/]{43}=)$/;
/** Unix seconds; 12 digits reach far past any real clock and keep the number exact. */
const TIMESTAMP = /^[0-9]{1,12}$/;
const encoder = new TextEncoder();

/**
 * The HMAC key bytes of a secret: a `whsec_` secret is base64 after the prefix (the form
 * Standard Webhooks tools generate) and is decoded; any other secret is used as its UTF-8
 * bytes. Throws `ConfigError` (never showing the secret) for a `whsec_` secret that is not base64.
 */
export function standardWebhookKey(secret: string, field = 'secret'): Uint8Array {
  if (!secret.startsWith(SECRET_PREFIX)) return encoder.encode(secret);
  const encoded = secret.slice(SECRET_PREFIX.length);
  const bytes = encoded.length % 4 === 0 && BASE64.test(encoded) ? fromBase64(encoded) : undefined;
  if (bytes === undefined || bytes.length === 0) {
    throw new ConfigError(
      `Expected \`${field}\`, which starts with "whsec_", to continue with the base64 of the key bytes, got ` +
      `${encoded.length} characters that are not base64 (not shown). Copy the whole secret, or leave out the prefix to use it as text.`,
      field,
    );
  }
  return bytes;
}

/** Key bytes of every secret given (one while rotating, or several), checked. */
export function standardWebhookKeys(secret: WebhookSecret): Uint8Array[] {
  assertSecret(secret);
  return typeof secret === 'string' ? [decodedKey(secret, 'secret')] : secret.map((s, i) => decodedKey(s, `secret[${i}]`));
}

/** Decoded keys by secret, so the pure functions skip the decoding on every call; a handful at most. */
const decodedKeys = new Map<string, Uint8Array>();

function decodedKey(secret: string, field: string): Uint8Array {
  let key = decodedKeys.get(secret);
  if (key === undefined) {
    key = standardWebhookKey(secret, field);
    if (decodedKeys.size >= MAX_CACHED_KEYS) decodedKeys.clear();
    decodedKeys.set(secret, key);
  }
  return key;
}

/** Node key objects by key bytes: HMAC with a KeyObject skips importing the key on each call. */
const keyObjects = new WeakMap<Uint8Array, KeyObject>();

function keyObject(key: Uint8Array, createSecretKey: (key: Uint8Array) => KeyObject): KeyObject {
  let object = keyObjects.get(key);
  if (object === undefined) {
    object = createSecretKey(key);
    keyObjects.set(key, object);
  }
  return object;
}

/**
 * The headers of a Standard Webhooks request for `rawBody` (hashed as UTF-8 when a string):
 * one `v1` signature per secret given (several while rotating). Throws `InvalidArgumentError`
 * for a body that is not raw, an empty id or one with a line break, and `ConfigError` for an
 * empty secret. Needs `node:crypto`; `signStandardWebhookAsync` uses Web Crypto.
 */
export function signStandardWebhook(rawBody: WebhookBody, secret: WebhookSecret, options: SignStandardWebhookOptions): StandardWebhookHeaders {
  const input = toBodyInput(rawBody);
  const keys = standardWebhookKeys(secret);
  const { id, seconds } = signingInput(options);
  return { 'webhook-id': id, 'webhook-timestamp': String(seconds), 'webhook-signature': standardSignatures(keys, id, seconds, input) };
}

/** `signStandardWebhook` on Web Crypto, for runtimes without `node:crypto`. */
export async function signStandardWebhookAsync(
  rawBody: WebhookBody,
  secret: WebhookSecret,
  options: SignStandardWebhookOptions,
): Promise<StandardWebhookHeaders> {
  const bytes = toBodyBytes(rawBody);
  const keys = standardWebhookKeys(secret);
  const { id, seconds } = signingInput(options);
  const content = signedContent(id, seconds, bytes);
  const signatures: string[] = [];
  for (const key of keys) {
    const mac = await subtle().sign('HMAC', await importKey(key), content);
    signatures.push(`v1,${toBase64(new Uint8Array(mac))}`);
  }
  return { 'webhook-id': id, 'webhook-timestamp': String(seconds), 'webhook-signature': signatures.join(' ') };
}

/**
 * Whether the request carries a Standard Webhooks signature of `rawBody` under `secret` (or any
 * one of several while rotating) with a timestamp within `tolerance` of now. Compares in constant
 * time. Returns false, never throws, for missing, repeated or malformed headers. Throws
 * `InvalidArgumentError` when `rawBody` is parsed JSON and `ConfigError` for an empty secret.
 */
export function verifyStandardWebhook(
  rawBody: WebhookBody,
  headers: HeadersLike,
  secret: WebhookSecret,
  options?: VerifyStandardWebhookOptions,
): boolean {
  return checkStandardWebhook(rawBody, headers, secret, options) === undefined;
}

/** `verifyStandardWebhook` on Web Crypto. Same answers for the same inputs. */
export async function verifyStandardWebhookAsync(
  rawBody: WebhookBody,
  headers: HeadersLike,
  secret: WebhookSecret,
  options?: VerifyStandardWebhookOptions,
): Promise<boolean> {
  return (await checkStandardWebhookAsync(rawBody, headers, secret, options)) === undefined;
}

/**
 * Like `verifyStandardWebhook`, but says why a request fails: `undefined` when it passes, else
 * the error (not thrown) a receiver reports: `WebhookTimestampError` when the signature matched
 * but the timestamp is outside the tolerance, `SignatureVerificationError` for the rest.
 */
export function checkStandardWebhook(
  rawBody: WebhookBody,
  headers: HeadersLike,
  secret: WebhookSecret,
  options: VerifyStandardWebhookOptions = {},
): SignatureVerificationError | undefined {
  const input = toBodyInput(rawBody);
  return checkWithKeys(input, headers, standardWebhookKeys(secret), verifyOptions(options));
}

/** `checkStandardWebhook` on Web Crypto. */
export async function checkStandardWebhookAsync(
  rawBody: WebhookBody,
  headers: HeadersLike,
  secret: WebhookSecret,
  options: VerifyStandardWebhookOptions = {},
): Promise<SignatureVerificationError | undefined> {
  const bytes = toBodyBytes(rawBody);
  return checkWithKeysAsync(bytes, headers, standardWebhookKeys(secret), verifyOptions(options));
}

interface ResolvedVerify {
  readonly now: number;
  readonly tolerance: number;
}

function verifyOptions(options: VerifyStandardWebhookOptions): ResolvedVerify {
  const tolerance = durationOption('tolerance', options.tolerance ?? STANDARD_WEBHOOKS_TOLERANCE, 0, Number.MAX_SAFE_INTEGER);
  return { now: options.now ?? Date.now(), tolerance };
}

/** The parts of a request a check needs, or the reason it cannot pass. */
type ReadHeaders =
  | { readonly id: string; readonly seconds: number; readonly signatures: readonly Uint8Array[] }
  | { readonly error: SignatureVerificationError };

/**
 * Reads and checks the three headers without any crypto. Never throws: odd header objects
 * (getters that throw, null) read as missing headers.
 */
export function readStandardHeaders(headers: HeadersLike): ReadHeaders {
  const id = single(safeHeader(headers, WEBHOOK_ID_HEADER));
  const timestamp = single(safeHeader(headers, WEBHOOK_TIMESTAMP_HEADER));
  const signature = safeHeader(headers, WEBHOOK_SIGNATURE_HEADER);
  if (id === undefined || timestamp === undefined || signature === undefined || signature === null || signature === '') {
    return {
      error: new SignatureVerificationError(
        'The Standard Webhooks headers (webhook-id, webhook-timestamp, webhook-signature) are missing or repeated: ' +
        'the sender did not sign the request this way (is `signing` set to "standard-webhooks" or "both" on the destination?).',
      ),
    };
  }
  if (!TIMESTAMP.test(timestamp)) {
    return { error: new SignatureVerificationError('The webhook-timestamp header is not a whole number of unix seconds.') };
  }
  const signatures: Uint8Array[] = [];
  const values = typeof signature === 'string' ? [signature] : signature;
  for (const value of values) {
    for (const entry of value.split(' ')) {
      const match = V1_SIGNATURE.exec(entry);
      if (match !== null) signatures.push(fromBase64(match[1]!)!);
    }
  }
  if (signatures.length === 0) {
    return { error: new SignatureVerificationError('The webhook-signature header holds no "v1,<base64 of 32 bytes>" signature.') };
  }
  return { id, seconds: Number(timestamp), signatures };
}

/**
 * The sync check with keys decoded once (the receiver does that at setup). `input` is typed with
 * the standard `ArrayBufferView` rather than Node's, so these declarations need no @types/node.
 */
export function checkWithKeys(
  input: string | ArrayBufferView,
  headers: HeadersLike,
  keys: readonly Uint8Array[],
  options: ResolvedVerify,
): SignatureVerificationError | undefined {
  const read = readStandardHeaders(headers);
  if ('error' in read) return read.error;
  const { createHmac, createSecretKey, timingSafeEqual } = nodeCrypto();
  const prefix = `${read.id}.${read.seconds}.`;
  for (const key of keys) {
    const mac = createHmac('sha256', keyObject(key, createSecretKey)).update(prefix).update(input as string | NodeJS.ArrayBufferView).digest();
    if (read.signatures.some((candidate) => timingSafeEqual(mac, candidate))) return checkTime(read.seconds, options);
  }
  return mismatch();
}

/** The Web Crypto check; `subtle.verify` compares in constant time. */
export async function checkWithKeysAsync(
  bytes: ArrayBufferView,
  headers: HeadersLike,
  keys: readonly Uint8Array[],
  options: ResolvedVerify,
): Promise<SignatureVerificationError | undefined> {
  const read = readStandardHeaders(headers);
  if ('error' in read) return read.error;
  const content = signedContent(read.id, read.seconds, bytes);
  for (const key of keys) {
    const cryptoKey = await importKey(key);
    for (const candidate of read.signatures) {
      if (await subtle().verify('HMAC', cryptoKey, candidate, content)) return checkTime(read.seconds, options);
    }
  }
  return mismatch();
}

function checkTime(seconds: number, { now, tolerance }: ResolvedVerify): WebhookTimestampError | undefined {
  return Math.abs(seconds * 1000 - now) > tolerance ? new WebhookTimestampError(seconds, now, tolerance) : undefined;
}

function mismatch(): SignatureVerificationError {
  return new SignatureVerificationError('The webhook-signature header does not match the id, timestamp and body under any configured secret.');
}

function signingInput(options: SignStandardWebhookOptions): { id: string; seconds: number } {
  const { id, timestamp } = options ?? ({} as SignStandardWebhookOptions);
  if (typeof id !== 'string' || id === '' || /[\r\n]/.test(id)) {
    throw new InvalidArgumentError('Expected `id` to be the message id, a non-empty string without line breaks (the same on every retry).', 'id');
  }
  const at = timestamp === undefined ? Date.now() : timestamp instanceof Date ? timestamp.getTime() : Number.NaN;
  if (!Number.isFinite(at) || at < 0) {
    throw new InvalidArgumentError('Expected `timestamp` to be a valid Date at or after 1970 (default: now).', 'timestamp');
  }
  return { id, seconds: Math.floor(at / 1000) };
}

function signedContent(id: string, seconds: number, body: ArrayBufferView): Uint8Array {
  const prefix = encoder.encode(`${id}.${seconds}.`);
  const content = new Uint8Array(prefix.length + body.byteLength);
  content.set(prefix, 0);
  content.set(new Uint8Array(body.buffer, body.byteOffset, body.byteLength), prefix.length);
  return content;
}

function safeHeader(headers: HeadersLike, name: string): string | readonly string[] | null | undefined {
  try {
    return getHeader(headers, name);
  } catch {
    return undefined;
  }
}

/** One value, or undefined when missing or repeated (the sender sends each header once). */
function single(value: string | readonly string[] | null | undefined): string | undefined {
  const one = Array.isArray(value) ? (value.length === 1 ? value[0] : undefined) : value;
  return typeof one === 'string' && one !== '' ? one : undefined;
}

/** Imported Web Crypto keys by key bytes; a handful at most (one per secret in rotation). */
const importedKeys = new Map<string, Promise<webcrypto.CryptoKey>>();
const MAX_CACHED_KEYS = 16;

function importKey(key: Uint8Array): Promise<webcrypto.CryptoKey> {
  const cacheKey = toBase64(key);
  const cached = importedKeys.get(cacheKey);
  if (cached !== undefined) return cached;
  if (importedKeys.size >= MAX_CACHED_KEYS) importedKeys.clear();
  const imported = subtle().importKey('raw', key, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign', 'verify']);
  imported.catch(() => importedKeys.delete(cacheKey));
  importedKeys.set(cacheKey, imported);
  return imported;
}

function subtle(): webcrypto.SubtleCrypto {
  const api = globalThis.crypto?.subtle;
  if (!api) {
    throw new EventRelayError('Web Crypto (globalThis.crypto.subtle) is not available in this runtime.', 'ERR_UNSUPPORTED_RUNTIME');
  }
  return api;
}

/** Node's Buffer where there is one (much faster than `atob` on Node 20); `atob`/`btoa` elsewhere. */
const NodeBuffer = (globalThis as { Buffer?: typeof Buffer }).Buffer;

/** Bytes of base64 `text` (callers check the alphabet first), or undefined. */
function fromBase64(text: string): Uint8Array | undefined {
  if (NodeBuffer !== undefined) return NodeBuffer.from(text, 'base64');
  let binary: string;
  try {
    binary = atob(text);
  } catch {
    return undefined;
  }
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

function toBase64(bytes: Uint8Array): string {
  if (NodeBuffer !== undefined) return NodeBuffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
  let binary = '';
  for (let i = 0; i < bytes.length; i++) binary += String.fromCharCode(bytes[i]!);
  return btoa(binary);
}
