import type Http from 'node:http';
import type Https from 'node:https';
import type Tls from 'node:tls';
import type { PeerCertificate } from 'node:tls';
import type Url from 'node:url';
import { EventRelayError } from '../errors';

/*
 * What the Node transports take from Node, in a file of its own: its declarations name Node's
 * types, and only `eventrelay/internal` (the forwarder's entry) exports them, so the declarations
 * of `eventrelay` need no @types/node (a Workers or Edge project type-checks without it).
 */

/** The Node modules the transport uses, loaded when one is made (see `nodeBuiltins`). */
export interface NodeBuiltins {
  readonly http: typeof Http;
  readonly https: typeof Https;
  readonly tls: typeof Tls;
  readonly url: typeof Url;
}

let builtins: NodeBuiltins | undefined;

/**
 * `node:http`, `node:https`, `node:tls` and `node:url` where the runtime has them (Node, Bun,
 * Deno), else undefined. Looked up with `process.getBuiltinModule` (Node >= 20.16) rather than
 * imported, so that `eventrelay` loads on runtimes without them (Cloudflare Workers, Vercel
 * Edge) and bundlers for those runtimes find no Node import to resolve.
 */
export function nodeBuiltins(): NodeBuiltins | undefined {
  if (builtins !== undefined) return builtins;
  const load = globalThis.process?.getBuiltinModule;
  if (typeof load !== 'function') return undefined;
  try {
    const http = globalThis.process.getBuiltinModule('node:http');
    const https = globalThis.process.getBuiltinModule('node:https');
    const tls = globalThis.process.getBuiltinModule('node:tls');
    const url = globalThis.process.getBuiltinModule('node:url');
    if (typeof http?.request !== 'function' || typeof https?.request !== 'function' || tls === undefined || url === undefined) return undefined;
    builtins = { http, https, tls, url };
    return builtins;
  } catch {
    return undefined;
  }
}

/** `nodeBuiltins()`, or an `ERR_UNSUPPORTED_RUNTIME` error saying to use `FetchTransport`. */
export function requireBuiltins(): NodeBuiltins {
  const loaded = nodeBuiltins();
  if (loaded === undefined) {
    throw new EventRelayError(
      'NodeTransport needs node:http, which this runtime does not provide. Use FetchTransport (the default where node:http is missing).',
      'ERR_UNSUPPORTED_RUNTIME',
    );
  }
  return loaded;
}

/**
 * Runs after Node has verified the chain: refuses a leaf that signed itself even when a
 * test CA list made it "trusted", so no configuration accepts a self-signed receiver.
 */
export function refuseSelfSignedLeaf(host: string, cert: PeerCertificate): Error | undefined {
  const { tls } = requireBuiltins();
  const identityError = tls.checkServerIdentity(host, cert);
  if (identityError) return identityError;
  const issuer = (cert as Tls.DetailedPeerCertificate).issuerCertificate;
  if (issuer !== undefined && issuer.fingerprint256 === cert.fingerprint256) {
    return Object.assign(new Error('The receiver presented a self-signed certificate'), { code: 'ERR_SELF_SIGNED_LEAF' });
  }
  return undefined;
}

/**
 * The CAs a TLS connection trusts: Node's root store and the extra PEM certificates given, each
 * as text (PEM is ASCII, so bytes decode to the same certificates). Text because Node's TLS
 * options are typed for its Buffer, which `eventrelay`'s own declarations do not name.
 */
export function trustedCertificates(tls: Pick<typeof Tls, 'rootCertificates'>, extra: string | Uint8Array | readonly (string | Uint8Array)[]): string[] {
  const decoder = new TextDecoder();
  return [...tls.rootCertificates, ...[extra].flat().map((pem) => (typeof pem === 'string' ? pem : decoder.decode(pem)))];
}
