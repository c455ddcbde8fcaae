// Adapter: eventrelay's Analytics with the disk spool on (`spool: { dir, sync: 'always' }`), from the
// package's build (`npm run build` -> dist/). The spool's files go to a fresh temporary directory,
// removed when the run ends; CPU per message is compared with the in-memory floor of the same run.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Analytics } from '../../../packages/eventrelay/dist/index.js';

export const label = 'eventrelay, spool sync: always';

export function create({ endpoint, writeKey, flushAt, flushInterval, maxQueueSize, closeTimeout, onError }) {
  const dir = mkdtempSync(join(process.env.BENCH_SPOOL_TMP ?? tmpdir(), 'eventrelay-bench-spool-'));
  process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
  const client = new Analytics({ writeKey, endpoint, flushAt, flushInterval, maxQueueSize, maxRetries: 20, spool: { dir, sync: 'always' } });
  client.on('error', onError);
  return {
    track: (userId, event, properties) => client.track({ userId, event, properties }),
    close: () => client.closeAndFlush({ timeout: closeTimeout }),
  };
}
