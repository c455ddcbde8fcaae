import { describe, it } from 'mocha';
import { expect } from 'chai';
import { createForwarder } from '../../src/service';
import type { ForwarderConfig } from '../../src/config';
import { MAX_SCHEMA_NAMES } from '../../src/schema-rules';
import { useTempDirs } from '../../../../test/helpers/temp-dir';
import { basic, freshStorage, post, startReceiver, waitFor } from './helpers';
import type { StoreKind } from './helpers';

const ADMIN = 'schema-flood-admin-token';

type Shown = { events: { type: string; event?: string; count: number }[]; otherEvents: { count: number } | null };

/**
 * A write key is public on a web page: whoever has it may send thousands of made-up event names.
 * The schema view must still show the source's real events: names first seen before the flood
 * keep their own rows (and keep counting, even in a window the flood filled), and the most-sent
 * come first.
 */
for (const kind of ['memory', 'sqlite', 'postgres'] as const satisfies readonly StoreKind[]) {
  describe(`the schema view under a flood of junk event names (${kind} store)`, function () {
    this.timeout(90_000);
    const tempDir = useTempDirs('eventrelay-schema-flood-');

    it(`keeps the real names, most-sent first, after ${MAX_SCHEMA_NAMES} junk names; the junk past the cap is counted apart`, async function () {
      const cleanups: (() => Promise<void>)[] = [];
      const receiver = await startReceiver();
      const storage = await freshStorage(kind, tempDir, cleanups, () => this.skip());
      const config = {
        adminToken: ADMIN,
        storage,
        sources: [{ name: 'web', writeKey: 'flood-key', destinations: { Webhooks: { webhooks: [{ url: `${receiver.url}/web` }] } } }],
      } as ForwarderConfig;
      const forwarder = createForwarder(config);
      try {
        const { url } = await forwarder.listen({ port: 0, host: '127.0.0.1' });
        const send = async (events: string[]) => {
          const batch = events.map((event) => ({ type: 'track', userId: 'u', event }));
          expect((await post(`${url}/v1/batch`, { batch }, { Authorization: basic('flood-key') })).status).to.equal(200);
        };
        const schema = async (): Promise<Shown> => (await fetch(`${url}/admin/sources/web/schema`, { headers: { Authorization: `Bearer ${ADMIN}` } })).json() as Promise<Shown>;
        const count = (shown: Shown, event: string) => shown.events.find((e) => e.event === event)?.count ?? 0;
        await send(['Order Completed', 'Order Completed', 'Order Completed', 'Signed Up', 'Signed Up']);
        await waitFor(async () => count(await schema(), 'Signed Up') === 2, 'the real names in the schema');
        // The flood, then the real names again at once: in the same counting window.
        for (let i = 0; i < MAX_SCHEMA_NAMES + 200; i += 400) {
          await send(Array.from({ length: 400 }, (_, j) => `junk-${i + j}-${Math.random().toString(36).slice(2)}`));
        }
        await send(['Order Completed', 'Order Completed', 'Order Completed', 'Signed Up', 'Signed Up']);
        await waitFor(async () => count(await schema(), 'Signed Up') === 4 && count(await schema(), 'Order Completed') === 6, 'the real names counted after the flood', 20_000);
        const shown = await schema();
        const tracks = shown.events.filter((e) => e.type === 'track');
        expect(tracks.slice(0, 2).map((e) => [e.event, e.count])).to.deep.equal([
          ['Order Completed', 6],
          ['Signed Up', 4],
        ]);
        expect(tracks.length).to.be.at.most(MAX_SCHEMA_NAMES);
        // The junk names past the cap are counted in one row of their own.
        await waitFor(async () => ((await schema()).otherEvents?.count ?? 0) >= 200, 'the junk past the cap counted apart');
      } finally {
        await forwarder.close();
        await receiver.close();
        for (const cleanup of cleanups) await cleanup();
      }
    });
  });
}
