import { describe, it, after, afterEach } from 'mocha';
import { expect } from 'chai';
import pg from 'pg';
import { PostgresStore } from '../../src/store/postgres/postgres';
import { PostgresDeliveryLog } from '../../src/store/postgres/postgres-log';
import { attempt, call, deliveryLogContract, T0 } from '../unit/store/delivery-log-contract';
import { truncate, usePostgres } from '../../../../test/helpers/postgres';
import { basic, post, useReceiver, useTwoForSuite, waitFor } from './helpers';

const ADMIN = 'pg-admin-token';
const auth = { Authorization: `Bearer ${ADMIN}` };

describe('PostgresDeliveryLog (real server)', function () {
  this.timeout(30_000);
  const db = usePostgres();
  const stores: PostgresStore[] = [];

  after(async () => {
    for (const store of stores) await store.close();
  });

  deliveryLogContract('PostgresDeliveryLog', async (keepDelivered) => {
    const store = await PostgresStore.open({ url: db.url, poolSize: 4 });
    stores.push(store);
    const log = new PostgresDeliveryLog(store.logConnections, { keepDelivered });
    await truncate(db.url, ['log_messages', 'log_attempts'], true);
    return log;
  });

  it('holds a pending call until its first attempt and inserts its line once, finished: no second row version', async () => {
    const store = await PostgresStore.open({ url: db.url, poolSize: 4 });
    stores.push(store);
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    // A hold longer than the test: the line can only reach the table with its attempt, or on a read.
    const log = new PostgresDeliveryLog(store.logConnections, { keepDelivered: 0 }, { holdMs: 60_000 });
    try {
      await client.query('TRUNCATE log_messages, log_attempts RESTART IDENTITY');
      log.add([call('held')]);
      // Several timed flushes pass (one per 50 ms) without writing the line.
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect((await client.query('SELECT count(*)::int AS n FROM log_messages')).rows[0].n).to.equal(0);
      log.attempt(attempt('held', 1, 'delivered', T0 + 400));
      await waitFor(async () => (await client.query('SELECT count(*)::int AS n FROM log_messages')).rows[0].n === 1, 'the line with its attempt');
      // The first tuple of an empty table, never updated (an update leaves a new version at (0,2)).
      const { rows } = await client.query("SELECT ctid::text AS ctid, state, attempts, body IS NULL AS erased FROM log_messages WHERE message_id = 'held'");
      expect(rows).to.deep.equal([{ ctid: '(0,1)', state: 'delivered', attempts: 1, erased: true }]);
      // A read does not wait for the hold.
      log.add([call('read')]);
      expect((await log.list({ messageId: 'read', limit: 1 }))[0]).to.deep.include({ state: 'pending', hasBody: true });
    } finally {
      await log.close();
      await client.end();
    }
  });

  describe("two instances' logs on one database", () => {
    const opened: PostgresDeliveryLog[] = [];
    afterEach(async () => {
      for (const log of opened.splice(0)) await log.close();
    });

    /** Two logs on one store's connections, as two instances have; `internals` for the second. */
    async function twoLogs(internals: ConstructorParameters<typeof PostgresDeliveryLog>[2] = {}): Promise<[PostgresDeliveryLog, PostgresDeliveryLog]> {
      const store = await PostgresStore.open({ url: db.url, poolSize: 4 });
      stores.push(store);
      const logs: [PostgresDeliveryLog, PostgresDeliveryLog] = [
        new PostgresDeliveryLog(store.logConnections, { keepDelivered: 0 }),
        new PostgresDeliveryLog(store.logConnections, { keepDelivered: 0 }, internals),
      ];
      opened.push(...logs);
      return logs;
    }

    it('keeps an attempt on a line the other instance has not written yet, and applies it once the line is there', async () => {
      const [a, b] = await twoLogs();
      // B delivered what A accepted before A's buffered line reached the table.
      b.attempt(attempt('cross', 1, 'delivered', T0 + 5));
      await b.flush();
      a.add([call('cross')]);
      await a.flush();
      await b.flush();
      const [line] = await a.list({ messageId: 'cross', limit: 5 });
      expect(line).to.include({ state: 'delivered', attempts: 1, hasBody: false, finishedAt: T0 + 5 });
      expect((await a.get(line!.id))!.attemptLog.map((x) => [x.attempt, x.status, x.outcome])).to.deep.equal([[1, 200, 'delivered']]);
    });

    it("applies an attempt timed before the call's receipt by another machine's clock", async () => {
      const [a, b] = await twoLogs();
      a.add([call('skew', { receivedAt: T0 + 100 })]);
      await a.flush();
      // B's clock runs 10 ms behind A's.
      b.attempt(attempt('skew', 1, 'delivered', T0 + 90));
      await b.flush();
      expect((await a.list({ messageId: 'skew', limit: 1 }))[0]).to.include({ state: 'delivered', attempts: 1, finishedAt: T0 + 90 });
    });

    it('writes the waiting attempt without another write to start a flush', async () => {
      const [a, b] = await twoLogs();
      b.attempt(attempt('later', 1, 'delivered', T0 + 5));
      await b.flush();
      a.add([call('later')]);
      await a.flush();
      await waitFor(async () => (await a.list({ messageId: 'later', limit: 1 }))[0]?.state === 'delivered', 'the attempt written by its own timer');
    });

    it('writes an attempt in the series the line is in, after another instance replayed it', async () => {
      const [a, b] = await twoLogs();
      b.add([call('rep')]);
      await b.flush();
      // A failed it for good and replayed it; B, which accepted it, then delivers the replay.
      a.attempt(attempt('rep', 1, 'failed', T0 + 10));
      await a.flush();
      const [failed] = await a.list({ messageId: 'rep', limit: 1 });
      expect(failed).to.include({ state: 'failed', series: 1 });
      await a.replay([failed!.id], T0 + 20);
      b.attempt(attempt('rep', 1, 'delivered', T0 + 30));
      await b.flush();
      const detail = (await b.get(failed!.id))!;
      expect(detail).to.include({ state: 'delivered', series: 2 });
      expect(detail.attemptLog.map((x) => [x.series, x.attempt, x.outcome])).to.deep.equal([
        [1, 1, 'failed'],
        [2, 1, 'delivered'],
      ]);
    });

    it('remembers a bounded number of open lines: those another instance finished do not pile up', async () => {
      const [a, b] = await twoLogs({ openLines: 3 });
      const ids = Array.from({ length: 10 }, (_, i) => `bound-${i}`);
      b.add(ids.map((id) => call(id)));
      await b.flush();
      for (const id of ids.slice(1)) a.attempt(attempt(id, 1, 'delivered', T0 + 5));
      await a.flush();
      expect(b.openLines).to.be.at.most(3);
      // One it forgot is found in the table again.
      b.attempt(attempt('bound-0', 1, 'delivered', T0 + 6));
      await b.flush();
      expect((await b.list({ messageId: 'bound-0', limit: 1 }))[0]).to.include({ state: 'delivered', attempts: 1 });
    });

    it('stops waiting for a line after the wait (a minute by default)', async () => {
      const [a, b] = await twoLogs({ waitMs: 100 });
      b.attempt(attempt('gone', 1, 'delivered', T0 + 5));
      await b.flush();
      expect(b.waitingAttempts).to.equal(1);
      await new Promise((resolve) => setTimeout(resolve, 150));
      await b.flush();
      expect(b.waitingAttempts).to.equal(0);
      a.add([call('gone')]);
      await a.flush();
      await b.flush();
      expect((await a.list({ messageId: 'gone', limit: 1 }))[0]).to.include({ state: 'pending', attempts: 0 });
    });

    it('keeps a bounded number of attempts waiting for lines, the newest', async () => {
      const [a, b] = await twoLogs({ waitingAttempts: 2 });
      const ids = ['wait-0', 'wait-1', 'wait-2', 'wait-3'];
      for (const id of ids) b.attempt(attempt(id, 1, 'delivered', T0 + 5));
      await b.flush();
      expect(b.waitingAttempts).to.equal(2);
      a.add(ids.map((id) => call(id)));
      await a.flush();
      await b.flush();
      expect(b.waitingAttempts).to.equal(0);
      const states = await Promise.all(ids.map(async (id) => (await a.list({ messageId: id, limit: 1 }))[0]!.state));
      expect(states).to.deep.equal(['pending', 'pending', 'delivered', 'delivered']);
    });

    it('lets one instance at a time prune the log', async () => {
      const [a] = await twoLogs();
      a.add([call('old')]);
      a.attempt(attempt('old', 1, 'delivered', T0 + 5));
      await a.flush();
      const client = new pg.Client({ connectionString: db.url });
      await client.connect();
      try {
        await client.query('SELECT pg_advisory_lock($1, $2)', [0x45_52_4c_59, 4]);
        // Another instance holds the log's prune lock: this one skips its round.
        expect(await a.prune(Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER)).to.equal(0);
        expect(await a.list({ messageId: 'old', limit: 1 })).to.have.length(1);
        await client.query('SELECT pg_advisory_unlock($1, $2)', [0x45_52_4c_59, 4]);
        expect(await a.prune(Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER)).to.be.above(0);
        expect(await a.list({ messageId: 'old', limit: 1 })).to.have.length(0);
      } finally {
        await client.end();
      }
    });

    it('an older attempt applied late does not undo a newer state', async () => {
      const [a, b] = await twoLogs();
      b.attempt(attempt('order', 1, 'retry', T0 + 10));
      await b.flush();
      // A retried it and delivered it, and wrote all that first.
      a.add([call('order')]);
      a.attempt(attempt('order', 2, 'delivered', T0 + 20));
      await a.flush();
      await b.flush();
      const [line] = await a.list({ messageId: 'order', limit: 5 });
      expect(line).to.include({ state: 'delivered', attempts: 2, finishedAt: T0 + 20, updatedAt: T0 + 20, reason: null });
      expect((await a.get(line!.id))!.attemptLog.map((x) => [x.attempt, x.outcome])).to.have.deep.members([[1, 'retry'], [2, 'delivered']]);
    });
  });

  describe('two forwarders on one database', () => {
    const receiver = useReceiver();
    const two = useTwoForSuite(() => ({
      adminToken: ADMIN,
      storage: { type: 'postgres', url: db.url },
      delivery: { minRetryDelay: 10, maxRetryDelay: 40, retryWindow: 150 },
      sources: [{ name: 'web', writeKey: 'pg-key', destinations: { Webhooks: { webhooks: [{ url: `${receiver.url}/pg` }] } } }],
    }));

    it('shows a call accepted by one instance in the other, and replays it from there', async () => {
      receiver.failFirst('/pg', 1000, 500);
      await post(`${two.urlA}/v1/track`, { userId: 'pg-user', event: 'Shared Log', messageId: 'pg-shared' }, { Authorization: basic('pg-key') });
      let row: any;
      await waitFor(async () => {
        const response = await fetch(`${two.urlB}/admin/messages?messageId=pg-shared`, { headers: auth });
        row = ((await response.json()) as any).items[0];
        return row?.status === 'failed';
      }, 'the failed delivery in the other instance');
      const detail = (await (await fetch(`${two.urlB}/admin/deliveries/${row.id}`, { headers: auth })).json()) as any;
      expect(detail.attemptLog.length).to.equal(detail.attempts).and.be.at.least(1);
      expect(JSON.parse(detail.body)).to.include({ event: 'Shared Log' });
      receiver.failFirst('/pg', 0);
      expect((await post(`${two.urlB}/admin/deliveries/${row.id}/replay`, {}, auth)).status).to.equal(202);
      await waitFor(() => receiver.delivered.some((r) => r.json.messageId === 'pg-shared'), 'the replayed delivery');
      await waitFor(async () => {
        const response = await fetch(`${two.urlA}/admin/deliveries/${row.id}`, { headers: auth });
        return ((await response.json()) as any).status === 'delivered';
      }, 'the log to show it delivered');
    });

    /** Sends a call that fails for good (the receiver answers 500), and returns its log line once it shows failed. */
    async function failedCall(messageId: string): Promise<any> {
      receiver.failFirst('/pg', 1000, 500);
      await post(`${two.urlA}/v1/track`, { userId: 'pg-user', event: 'Replay Race', messageId }, { Authorization: basic('pg-key') });
      let row: any;
      await waitFor(async () => {
        const response = await fetch(`${two.urlB}/admin/messages?messageId=${messageId}`, { headers: auth });
        row = ((await response.json()) as any).items[0];
        return row?.status === 'failed';
      }, `${messageId} failed`);
      receiver.failFirst('/pg', 0);
      return row;
    }

    const deliveredCount = (messageId: string) => receiver.delivered.filter((r) => r.json.messageId === messageId).length;

    it('logs a messageId sent to both instances at once as one delivery and one duplicate', async () => {
      const ids = Array.from({ length: 8 }, (_, i) => `pg-dup-race-${i}`);
      await Promise.all(
        ids.flatMap((messageId) =>
          [two.urlA, two.urlB].map(async (url) => {
            const answer = await post(`${url}/v1/track`, { userId: 'pg-user', event: 'Both', messageId }, { Authorization: basic('pg-key') });
            expect(answer.status).to.equal(200);
          }),
        ),
      );
      const lines = async (messageId: string) => ((await (await fetch(`${two.urlA}/admin/messages?messageId=${messageId}`, { headers: auth })).json()) as any).items;
      await waitFor(async () => (await Promise.all(ids.map(lines))).every((items) => items.length === 2 && items.some((i: any) => i.status === 'delivered')), 'two lines each');
      for (const messageId of ids) {
        expect((await lines(messageId)).map((i: any) => i.status).sort(), messageId).to.deep.equal(['delivered', 'duplicate']);
        expect(deliveredCount(messageId), messageId).to.equal(1);
      }
    });

    it('queues a delivery replayed on two instances at once only once', async () => {
      const row = await failedCall('pg-replay-race');
      const answers = await Promise.all([two.urlA, two.urlB].map((url) => post(`${url}/admin/deliveries/${row.id}/replay`, {}, auth)));
      expect(answers.map((a) => a.status).sort()).to.deep.equal([202, 409]);
      expect(answers.find((a) => a.status === 409)!.json.error.message).to.contain('pending');
      await waitFor(() => deliveredCount('pg-replay-race') === 1, 'the replayed delivery');
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(deliveredCount('pg-replay-race')).to.equal(1);
    });

    it('recovers a failed delivery once when two instances recover the same window at once', async () => {
      const row = await failedCall('pg-recover-race');
      const window = { source: 'web', since: new Date(row.receivedAt).toISOString() };
      const answers = await Promise.all([two.urlA, two.urlB].map((url) => post(`${url}/admin/recover`, window, auth)));
      expect(answers.map((a) => a.status)).to.deep.equal([202, 202]);
      expect(answers.map((a) => a.json.queued).reduce((x: number, y: number) => x + y)).to.equal(1);
      await waitFor(() => deliveredCount('pg-recover-race') === 1, 'the recovered delivery');
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(deliveredCount('pg-recover-race')).to.equal(1);
    });
  });
});
