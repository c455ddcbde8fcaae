import { FetchTransport } from './fetch';
import { NodeTransport } from './node';
import { nodeBuiltins } from './node-builtins';
import type { Transport } from './transport';

/** What the runtime offers, as far as the choice of transport goes. */
export interface RuntimeFeatures {
  /** `navigator.userAgent`, when there is one: `Cloudflare-Workers` on workerd. */
  readonly userAgent: string | undefined;
  /** Whether `node:http` and its siblings can be loaded (`process.getBuiltinModule`). */
  readonly nodeHttp: boolean;
}

/** The features of the runtime this code runs on. */
export function runtimeFeatures(): RuntimeFeatures {
  const userAgent = (globalThis as { navigator?: { userAgent?: unknown } }).navigator?.userAgent;
  return { userAgent: typeof userAgent === 'string' ? userAgent : undefined, nodeHttp: nodeBuiltins() !== undefined };
}

/**
 * Which transport the client uses when none is given: `node:http` where the runtime has it (Node,
 * Bun, Deno), `fetch` elsewhere (Vercel Edge). Workers with `nodejs_compat` have a `node:http`
 * that is itself built on `fetch`, so on workerd the client calls `fetch` directly.
 */
export function defaultTransportKind(features: RuntimeFeatures = runtimeFeatures()): 'node' | 'fetch' {
  return features.nodeHttp && features.userAgent !== 'Cloudflare-Workers' ? 'node' : 'fetch';
}

export function defaultTransport(): Transport {
  return defaultTransportKind() === 'node' ? new NodeTransport() : new FetchTransport();
}
