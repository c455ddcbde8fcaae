import type { ResolvedStorage } from '../config';
import { MemoryStore } from './memory';
import { PostgresStore } from './postgres/postgres';
import { SqliteStore } from './sqlite/sqlite';
import type { ForwarderStore } from './store';

/** Opens the store `storage` configures; `dataDir` overrides `storage.dataDir` (the CLI's `--data`). */
export async function openConfiguredStore(storage: ResolvedStorage, dataDir?: string): Promise<ForwarderStore> {
  if (storage.type === 'memory') return new MemoryStore();
  if (storage.type === 'postgres') return PostgresStore.open({ url: storage.url!, poolSize: storage.poolSize, connectTimeout: storage.connectTimeout });
  return new SqliteStore({ dataDir: dataDir ?? storage.dataDir, synchronous: storage.synchronous });
}
