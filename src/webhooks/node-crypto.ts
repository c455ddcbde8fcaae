import type * as NodeCrypto from 'node:crypto';
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
