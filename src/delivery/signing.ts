import { createHmac, createSecretKey } from 'node:crypto';
import type { KeyObject } from 'node:crypto';

/**
 * Spec 5.1: hex HMAC-SHA1 of the exact request body bytes, keyed with the shared secret.
 * Takes the bytes, not a value to stringify, so what is signed is what is sent.
 */
export function signBody(body: Buffer, secret: string | KeyObject): string {
  return createHmac('sha1', secret).update(body).digest('hex');
}

/** The secret as a key object, made once per destination so each signature skips the key import. */
export function signingKey(secret: string): KeyObject {
  return createSecretKey(Buffer.from(secret, 'utf8'));
}
