import { createHmac } from 'node:crypto';

/**
 * Spec 5.1: hex HMAC-SHA1 of the exact request body bytes, keyed with the shared secret.
 * Takes the bytes, not a value to stringify, so what is signed is what is sent.
 */
export function signBody(body: Buffer, secret: string): string {
  return createHmac('sha1', secret).update(body).digest('hex');
}
