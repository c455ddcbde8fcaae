import { toBodyBytes } from '../body';
import type { WebhookBody } from '../body';
import { assertSecret } from '../secret';
import type { WebhookSecret } from '../secret';
import { decodeSignature, toHex } from './signature-format';
import type { SignatureHeader } from './signature-format';
import type { webcrypto } from 'node:crypto';
import { ConfigError, EventRelayError } from '../../errors';

/** Imported keys by secret; a handful at most (one per secret in rotation), so a small cap will do. */
const keys = new Map<string, Promise<webcrypto.CryptoKey>>();
const MAX_CACHED_KEYS = 16;
const encoder = new TextEncoder();

/**
 * `sign` on Web Crypto, for runtimes without `node:crypto` (edge functions, workers).
 * Same result, same errors (as rejections).
 */
export async function signAsync(rawBody: WebhookBody, secret: string): Promise<string> {
  const bytes = toBodyBytes(rawBody);
  assertSecret(secret);
  if (typeof secret !== 'string') throw new ConfigError('signAsync() takes one secret (a string), got an array.', 'secret');
  const mac = await subtle().sign('HMAC', await hmacKey(secret), bytes);
  return toHex(new Uint8Array(mac));
}

/**
 * `verifySignature` on Web Crypto, for runtimes without `node:crypto`. Same answers for the
 * same inputs; Web Crypto's HMAC verify compares in constant time.
 */
export async function verifySignatureAsync(
  rawBody: WebhookBody,
  signature: SignatureHeader,
  secret: WebhookSecret,
): Promise<boolean> {
  const bytes = toBodyBytes(rawBody);
  assertSecret(secret);
  const expected = decodeSignature(signature);
  if (expected === undefined) return false;
  const secrets = typeof secret === 'string' ? [secret] : secret;
  for (const key of secrets) {
    if (await subtle().verify('HMAC', await hmacKey(key), expected, bytes)) return true;
  }
  return false;
}

function hmacKey(secret: string): Promise<webcrypto.CryptoKey> {
  const cached = keys.get(secret);
  if (cached !== undefined) return cached;
  if (keys.size >= MAX_CACHED_KEYS) keys.clear();
  const key = subtle().importKey('raw', encoder.encode(secret), { name: 'HMAC', hash: 'SHA-1' }, false, ['sign', 'verify']);
  key.catch(() => keys.delete(secret));
  keys.set(secret, key);
  return key;
}

function subtle(): webcrypto.SubtleCrypto {
  const api = globalThis.crypto?.subtle;
  if (!api) {
    throw new EventRelayError('Web Crypto (globalThis.crypto.subtle) is not available in this runtime.', 'ERR_UNSUPPORTED_RUNTIME');
  }
  return api;
}
