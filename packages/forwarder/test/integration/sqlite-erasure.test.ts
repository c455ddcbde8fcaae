import { describe, it } from 'mocha';
import { expect } from 'chai';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createForwarder } from '../../src/service';
import { basic, post, useReceiver, waitFor } from './helpers';
import { useTempDirs } from '../../../../test/helpers/temp-dir';

const ADDRESS = /person\d+@erasure\.example/g;

describe('delivered bodies do not linger in the SQLite files (secure_delete, WAL scrubbed)', function () {
  this.timeout(60_000);
  const tempDir = useTempDirs('eventrelay-erasure-');
  const receiver = useReceiver();

  /** The e-mail addresses readable in any file of the data directory (database, WAL, journal). */
  function readable(dataDir: string): string[] {
    return readdirSync(dataDir).flatMap((file) => readFileSync(join(dataDir, file)).toString('latin1').match(ADDRESS) ?? []);
  }

  it('leaves none of 1,000 delivered e-mail addresses readable in the database or its WAL, while running and after close', async () => {
    const dataDir = tempDir();
    const forwarder = createForwarder({ sources: [{ name: 'web', writeKey: 'k', destinations: { Webhooks: { webhooks: [{ url: `${receiver.url}/erasure` }] } } }] }, { dataDir });
    const { url } = await forwarder.listen({ port: 0 });
    try {
      for (let b = 0; b < 20; b++) {
        const batch = Array.from({ length: 50 }, (_, i) => ({
          type: 'identify',
          userId: `user-${b}-${i}`,
          traits: { email: `person${b * 50 + i}@erasure.example`, note: 'x'.repeat(200) },
          messageId: `erasure-${b}-${i}`,
        }));
        expect((await post(`${url}/v1/batch`, { batch }, { Authorization: basic('k') })).status).to.equal(200);
      }
      // Right after ingestion the bodies are on disk, as they must be until delivered.
      expect(readable(dataDir).length).to.be.above(0);
      await waitFor(() => receiver.delivered.filter((r) => r.path === '/erasure').length === 1000, 'every delivery', 30_000);
      await waitFor(async () => (await forwarder.stats()).queueDepth === 0, 'an empty queue');
      // The log lines finish too (their bodies erased), and within a moment the WAL is scrubbed.
      await waitFor(async () => (await forwarder.stats()).delivered === 1000, 'the outcomes');
      await waitFor(() => readable(dataDir).length === 0, 'no address left in the data directory while running', 10_000).catch((error: Error) => {
        throw new Error(`${error.message}: ${readable(dataDir).length} readable`);
      });
    } finally {
      await forwarder.close();
    }
    expect(readable(dataDir)).to.deep.equal([]);
  });
});
