import { ConfigError } from 'eventrelay/internal';
import type { Clock } from 'eventrelay/internal';
import type { ForwarderStore } from './contract';
import { openMemoryStore } from './memory/memory';
import { openPostgresStore } from './postgres/postgres';
import { openSqliteStore } from './sqlite/sqlite';

/** What `storage` says of the store to open (the config file's `storage`, resolved). */
export interface StorageChoice {
  readonly type: 'sqlite' | 'postgres' | 'memory';
  readonly dataDir: string;
  readonly synchronous: 'full' | 'normal';
  /** Set for `postgres` only. */
  readonly url: string | undefined;
  readonly poolSize: number;
  readonly connectTimeout: number;
}

/**
 * Opens the store `storage` configures; `dataDir` overrides `storage.dataDir` (the CLI's
 * `--data`), `clock` is the time rate budgets count in.
 */
export async function openConfiguredStore(
  storage: StorageChoice,
  options: { readonly dataDir?: string | undefined; readonly clock?: Clock } = {},
): Promise<ForwarderStore> {
  if (storage.type === 'memory') return openMemoryStore({ clock: options.clock });
  if (storage.type === 'postgres') return openPostgresStore({ url: storage.url!, poolSize: storage.poolSize, connectTimeout: storage.connectTimeout });
  const clock = options.clock === undefined ? {} : { clock: options.clock };
  return openSqliteStore({ dataDir: options.dataDir ?? storage.dataDir, synchronous: storage.synchronous, ...clock });
}

/** Each capability of the contract, by member, with what it is for (named in the error). */
const CAPABILITIES: ReadonlyArray<readonly [keyof ForwarderStore, 'function' | 'object' | 'boolean' | 'object-or-null', string]> = [
  ['accept', 'function', 'the queue'],
  ['enqueue', 'function', 'the queue'],
  ['claim', 'function', 'the queue'],
  ['nextDueAfter', 'function', 'the queue'],
  ['waitingFor', 'function', 'ordering per user'],
  ['record', 'function', 'the queue'],
  ['syncAudience', 'function', 'audiences'],
  ['counts', 'function', 'the queue'],
  ['prune', 'function', 'the queue'],
  ['close', 'function', 'the queue'],
  ['setup', 'object', 'the registry of sources'],
  ['rateBudget', 'object', 'rate budgets'],
  ['endpoints', 'object', 'endpoint states'],
  ['usage', 'object', 'what each source sends and its usage'],
  ['batches', 'object', 'batched delivery'],
  ['shared', 'boolean', 'whether other processes share it'],
  ['cluster', 'object-or-null', 'the instances\' views, null for a store one process uses'],
  ['openLog', 'function', 'the delivery log'],
];

/**
 * Refuses a store given in place of the configured one (`options.store`) that lacks a capability
 * of the contract, naming it: every part of the forwarder relies on all of them, so a missing one
 * fails here rather than falling back to something that silently keeps less.
 */
export function checkStore(store: ForwarderStore): void {
  const missing: string[] = [];
  for (const [member, kind, what] of CAPABILITIES) {
    const value: unknown = (store as unknown as Record<string, unknown>)[member];
    const present = kind === 'object-or-null' ? value === null || (typeof value === 'object' && value !== null) : kind === 'object' ? typeof value === 'object' && value !== null : typeof value === kind;
    if (!present) missing.push(`\`${member}\` (${what})`);
  }
  if (missing.length > 0) {
    throw new ConfigError(`The store given as \`store\` lacks ${missing.join(', ')}: a ForwarderStore offers every capability of the contract (store/contract.ts)`, 'store');
  }
}
