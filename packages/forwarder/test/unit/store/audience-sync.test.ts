import { describe, it, after } from 'mocha';
import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createForwarder } from '../../../src/service';

const dirs: string[] = [];
after(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

describe('Forwarder#syncAudience with 300,000 members', function () {
  this.timeout(180_000);

  it('keeps /health answering all along an HTTP sync and the logging of its notices (sqlite store, delivery log on)', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'eventrelay-audience-'));
    dirs.push(dataDir);
    // A receiver that never answers: the notices wait in flight instead of failing and retrying
    // all through the test.
    const silent = createServer(() => {});
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const hook = `http://127.0.0.1:${(silent.address() as AddressInfo).port}/hook`;
    const forwarder = createForwarder(
      {
        adminToken: 'audience-token',
        storage: { type: 'sqlite', synchronous: 'normal' },
        sources: [{ name: 'web', writeKey: 'k', destinations: { Webhooks: { webhooks: [{ url: hook }] } } }],
      },
      { dataDir },
    );
    const { url } = await forwarder.listen({ port: 0 });
    const members = Array.from({ length: 300_000 }, (_, i) => `user-${i}@example.com`);
    const sync = (list: string[]) =>
      fetch(`${url}/admin/audiences/sync`, {
        method: 'POST',
        headers: { Authorization: 'Bearer audience-token', 'Content-Type': 'application/json' },
        body: JSON.stringify({ source: 'web', audience: 'Everyone', members: list }),
      }).then(async (r) => ({ status: r.status, json: (await r.json()) as Record<string, unknown> }));
    // /health, one request after the other, for as long as the sync runs: when each answer came.
    let syncing = true;
    const answers: number[] = [];
    const health = (async () => {
      while (syncing) {
        const response = await fetch(`${url}/health`);
        expect(response.status).to.equal(200);
        await response.arrayBuffer();
        answers.push(performance.now());
      }
    })();
    try {
      const started = performance.now();
      const first = await sync(members);
      // The delivery log writes the 300,000 lines after the answer: a read of the log waits for
      // them all, so the window ends when it answers.
      const log = await fetch(`${url}/admin/messages?type=identify&limit=1`, { headers: { Authorization: 'Bearer audience-token' } });
      expect(((await log.json()) as { items: unknown[] }).items).to.have.length(1);
      const ended = performance.now();
      syncing = false;
      await health;
      expect(first.status).to.equal(200);
      expect(first.json).to.deep.include({ firstSync: true, added: 300_000, removed: 0, sent: 300_000 });
      // Never a long stall: the sync's time is cut in many short turns, /health answered between
      // them. Compared with the sync's own duration, so that a slow or loaded machine does not
      // matter; one block holding the loop for a quarter of it (as one pass over the members
      // would) fails.
      const during = answers.filter((t) => t > started && t < ended);
      expect(during.length).to.be.at.least(20);
      const stamps = [started, ...during, ended];
      const longest = Math.max(...stamps.slice(1).map((t, i) => t - stamps[i]!));
      expect(longest / (ended - started)).to.be.below(0.25);

      expect((await forwarder.stats()).queueDepth).to.equal(300_000);
      const next = await sync(members.slice(1000));
      expect(next.json).to.deep.include({ firstSync: false, added: 0, removed: 1000, sent: 1000 });
    } finally {
      syncing = false;
      await health.catch(() => {});
      silent.closeAllConnections();
      await forwarder.close();
      silent.close();
    }
  });
});
