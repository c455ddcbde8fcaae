import { ConfigError } from 'eventrelay/internal';
import type { ResolvedConfig } from '../config';
import { openConfiguredStore } from '../store/open';
import { SourceManager } from './manager';
import type { ApplyResult } from './manager';

/**
 * `eventrelay apply` against the configured store directly (not through a running forwarder):
 * opens it, makes its sources match the file's (`dryRun`: only reports the difference), closes
 * it. PostgreSQL while forwarders run on it (they apply the change within 2 s); SQLite only when
 * no forwarder holds the data directory (else apply through the forwarder, `--url`).
 */
export async function applyToStore(config: ResolvedConfig, options: { readonly dataDir?: string; readonly dryRun?: boolean } = {}): Promise<ApplyResult> {
  if (config.storage.type === 'memory') {
    throw new ConfigError(
      'A memory store lives inside its forwarder process: apply the file through the running forwarder with --url http://HOST:PORT',
      'storage.type',
    );
  }
  const store = await openConfiguredStore(config.storage, { dataDir: options.dataDir });
  try {
    const setup = store.setup;
    const manager = new SourceManager({
      setup: async () => setup,
      reload: async () => {},
      destination: () => undefined,
      // The file was checked as `serve` checks it before this runs.
      checkSettings: () => {},
      now: () => Date.now(),
    });
    return await manager.reconcile(config.sources, 'apply', options.dryRun ?? false);
  } finally {
    await store.close();
  }
}
