import { createHash, createSecretKey } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { standardSignatures, xSignature } from 'eventrelay/internal';
import { standardWebhookKey } from 'eventrelay/internal';

/**
 * Spec 5.1: hex HMAC-SHA1 of the exact request body bytes, keyed with the shared secret.
 * Takes the bytes, not a value to stringify, so what is signed is what is sent.
 */
export function signBody(body: Buffer, secret: string | KeyObject): string {
  return xSignature(secret, body);
}

/** The secret as a key object, made once per destination so each signature skips the key import. */
export function signingKey(secret: string): KeyObject {
  return createSecretKey(Buffer.from(secret, 'utf8'));
}

/**
 * Standard Webhooks key: a `whsec_` secret is base64 after the prefix, any other secret is used
 * as its UTF-8 bytes (the receiver helper reads secrets the same way). Throws `ConfigError`.
 */
export function standardSigningKey(secret: string, field: string): KeyObject {
  return createSecretKey(standardWebhookKey(secret, field));
}

/**
 * `webhook-signature`: `v1,` + base64 HMAC-SHA256 of `id.timestamp.body`, one per key (several
 * while a secret rotates), space-separated. `timestamp` is in unix seconds.
 */
export function signStandard(body: Buffer, id: string, timestamp: number, keys: readonly KeyObject[]): string {
  return standardSignatures(keys, id, timestamp, body);
}

/**
 * A `webhook-id` for a body sent without one: `msg_` + 24 base64url characters of its SHA-256, so
 * every retry of the same bytes carries the same id.
 */
export function bodyId(body: Buffer): string {
  return `msg_${createHash('sha256').update(body).digest('base64url').slice(0, 24)}`;
}
