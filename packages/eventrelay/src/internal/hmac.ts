import type * as NodeCrypto from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { EventRelayError } from '../errors';

type HmacFunctions = Pick<typeof NodeCrypto, 'createHmac' | 'createSecretKey' | 'timingSafeEqual'>;

let loaded: HmacFunctions | undefined;

/**
 * Node's `crypto`, loaded on first use rather than imported, so that `eventrelay/webhooks`
 * also loads on edge runtimes that have Web Crypto but no `node:crypto` (there the async
 * functions work and the sync ones throw this error).
 */
export function nodeCrypto(): HmacFunctions {
  if (loaded) return loaded;
  const module = globalThis.process?.getBuiltinModule?.('node:crypto');
  if (!module) {
    throw new EventRelayError(
      'sign() and verifySignature() need Node\'s crypto module, which this runtime does not provide. ' +
      'Use signAsync() and verifySignatureAsync() (Web Crypto) instead.',
      'ERR_UNSUPPORTED_RUNTIME',
    );
  }
  loaded = module;
  return module;
}

/**
 * The `X-Signature` of spec 5.1: lowercase hex HMAC-SHA1 of the exact body bytes. The one
 * implementation, for the sender (`WebhookDestination`, with a key object made once) and the
 * receiver helper's `sign()`.
 */
export function xSignature(key: string | KeyObject, body: NodeCrypto.BinaryLike): string {
  return nodeCrypto().createHmac('sha1', key).update(body).digest('hex');
}

/**
 * The `webhook-signature` of Standard Webhooks: `v1,` + base64 HMAC-SHA256 of `id.timestamp.body`,
 * one per key (several while a secret rotates), space-separated; `seconds` is unix time. The one
 * implementation, for the sender and the receiver helper.
 */
export function standardSignatures(keys: readonly (KeyObject | Uint8Array)[], id: string, seconds: number, body: NodeCrypto.BinaryLike): string {
  const { createHmac } = nodeCrypto();
  const prefix = `${id}.${seconds}.`;
  return keys.map((key) => `v1,${createHmac('sha256', key).update(prefix).update(body).digest('base64')}`).join(' ');
}
