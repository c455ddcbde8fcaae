import { toBodyInput } from '../body';
import type { WebhookBody } from '../body';
import { nodeCrypto, xSignature } from '../../internal/hmac';
import { assertSecret } from '../secret';
import type { WebhookSecret } from '../secret';
import { decodeSignature } from './signature-format';
import type { SignatureHeader } from './signature-format';
import { ConfigError } from '../../errors';

/**
 * The `X-Signature` value for `rawBody`: lowercase hex HMAC-SHA1 of its bytes (strings are
 * hashed as UTF-8), keyed with `secret`. Throws `InvalidArgumentError` for a body that is not
 * raw, `ConfigError` for an empty or missing secret.
 */
export function sign(rawBody: WebhookBody, secret: string): string {
  const input = toBodyInput(rawBody);
  assertSecret(secret);
  if (typeof secret !== 'string') throw new ConfigError('sign() takes one secret (a string), got an array.', 'secret');
  return xSignature(secret, input);
}

/**
 * Whether `signature` (the `X-Signature` header value) is the HMAC-SHA1 of the exact bytes of
 * `rawBody` under `secret`, or under any one of several secrets while rotating. Compares in
 * constant time. Returns false, never throws, for a missing, empty, repeated, wrong-length or
 * non-hex signature. Throws `InvalidArgumentError` when `rawBody` is not raw (parsed JSON) and
 * `ConfigError` when the secret is empty or missing: those are programming mistakes.
 */
export function verifySignature(rawBody: WebhookBody, signature: SignatureHeader, secret: WebhookSecret): boolean {
  const input = toBodyInput(rawBody);
  assertSecret(secret);
  const expected = decodeSignature(signature);
  if (expected === undefined) return false;
  const { createHmac, timingSafeEqual } = nodeCrypto();
  if (typeof secret === 'string') return timingSafeEqual(createHmac('sha1', secret).update(input).digest(), expected);
  for (const key of secret) {
    if (timingSafeEqual(createHmac('sha1', key).update(input).digest(), expected)) return true;
  }
  return false;
}
