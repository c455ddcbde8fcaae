import { describe, it } from 'mocha';
import { expect } from 'chai';
import { createForwarder } from '../../src/service';
import type { AttemptReport } from '../../src/scheduling/queue';
import { basic, post, startReceiver, useStoreKind, waitFor } from './helpers';
import { FakeClock } from '../../../../test/helpers/fake-clock';

const TOKEN = 'schedule-admin-token';

for (const kind of ['memory', 'sqlite', 'postgres'] as const) {
  describe(`the delivery log shows when each retry is due (${kind} store, fake clock)`, function () {
    this.timeout(30_000);
    const { cleanup, fresh } = useStoreKind(kind, 'eventrelay-schedule-', ['deliveries', 'messages', 'counters', 'sources', 'source_keys', 'log_messages', 'log_attempts']);

    it('GET /admin/deliveries/{id}: each attempt with its nextAttemptAt (the retry schedule), null on the last', async () => {
      const receiver = await startReceiver();
      cleanup.push(() => receiver.close());
      receiver.failFirst('/hook', 1);
      const clock = new FakeClock(Date.parse('2026-05-01T12:00:00.000Z'));
      const storage = await fresh();
      // Jitter at its middle: the first retry waits 750 ms (between 500 and 1000 by the schedule).
      const forwarder = createForwarder(
        { adminToken: TOKEN, storage, sources: [{ name: 'web', writeKey: 'k', destinations: { Webhooks: { webhooks: [{ url: `${receiver.url}/hook` }] } } }] },
        {},
        { clock, destination: { random: () => 0.5 } },
      );
      cleanup.push(() => forwarder.close());
      const reports: AttemptReport[] = [];
      forwarder.on('attempt', (r) => reports.push(r));
      const { url } = await forwarder.listen({ port: 0 });
      expect((await post(`${url}/v1/batch`, { batch: [{ type: 'track', userId: 'u', event: 'E', messageId: 'm1' }] }, { Authorization: basic('k') })).status).to.equal(200);
      await waitFor(() => reports.length === 1, 'the first attempt');
      expect(reports[0]!.result).to.deep.include({ status: 'retry', nextAttemptAt: clock.now() + 750 });
      await clock.tick(750);
      // The delivery loop may arm its timer for the retry only once the store answered (PostgreSQL):
      // timers due by now fire on each look, the clock standing at the retry's time.
      await waitFor(async () => {
        await clock.tick(0);
        return reports.length === 2;
      }, 'the retry');
      const headers = { Authorization: `Bearer ${TOKEN}` };
      const listed = (await (await fetch(`${url}/admin/messages?messageId=m1`, { headers })).json()) as { items: { id: number }[] };
      const detail = (await (await fetch(`${url}/admin/deliveries/${listed.items[0]!.id}`, { headers })).json()) as {
        status: string;
        attemptLog: { attempt: number; outcome: string; at: string; nextAttemptAt: string | null }[];
      };
      expect(detail.status).to.equal('delivered');
      expect(detail.attemptLog.map(({ attempt, outcome, at, nextAttemptAt }) => ({ attempt, outcome, at, nextAttemptAt }))).to.deep.equal([
        { attempt: 1, outcome: 'retry', at: '2026-05-01T12:00:00.000Z', nextAttemptAt: '2026-05-01T12:00:00.750Z' },
        { attempt: 2, outcome: 'delivered', at: '2026-05-01T12:00:00.750Z', nextAttemptAt: null },
      ]);
    });
  });
}
