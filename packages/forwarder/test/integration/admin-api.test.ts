import { describe, it, before, after } from 'mocha';
import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createForwarder } from '../../src/service';
import type { Forwarder } from '../../src/service';
import type { ForwarderConfig } from '../../src/config';
import { usePostgres } from '../../../../test/helpers/postgres';
import { MemoryStore } from '../../src/store/memory/memory';
import { StoreError } from '../../../eventrelay/src/errors';
import { basic, post, readAnswer, startReceiver, takeSseEvents, waitFor } from './helpers';
import type { Receiver, SseEvent } from './helpers';

const ADMIN = 'admin-token-for-ops-tests';
const auth = { Authorization: `Bearer ${ADMIN}` };

async function get(url: string, headers: Record<string, string> = auth): Promise<{ status: number; json: any; text: string; headers: Headers }> {
  const response = await fetch(url, { headers });
  return readAnswer(response);
}

/** Reads Server-Sent Events from a fetch stream until `until` returns true for the events so far. */
async function readEvents(
  url: string,
  headers: Record<string, string>,
  start: () => Promise<void>,
  until: (events: SseEvent[]) => boolean,
): Promise<SseEvent[]> {
  const control = new AbortController();
  const response = await fetch(url, { headers, signal: control.signal });
  expect(response.status).to.equal(200);
  expect(response.headers.get('content-type')).to.match(/^text\/event-stream/);
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  const events: SseEvent[] = [];
  const buffer = { text: '' };
  await start();
  const deadline = Date.now() + 10_000;
  while (!until(events)) {
    if (Date.now() > deadline) throw new Error(`Timed out; events so far: ${JSON.stringify(events.map((e) => e.event))}`);
    const { value, done } = await reader.read();
    if (done) break;
    buffer.text += decoder.decode(value, { stream: true });
    takeSseEvents(buffer, events);
  }
  control.abort();
  return events;
}

for (const store of ['memory', 'sqlite', 'postgres'] as const) {
  describe(`forwarder operations API, ${store} store (integration, 127.0.0.1)`, function () {
    this.timeout(30_000);
    // The database outlives the forwarder: its hooks are outside the forwarder's.
    const db = store === 'postgres' ? usePostgres() : undefined;
    describe('with a forwarder', () => {
      let receiver: Receiver;
      let forwarder: Forwarder;
      let url: string;
      let dataDir: string;

      before(async () => {
        receiver = await startReceiver();
        dataDir = mkdtempSync(join(tmpdir(), 'eventrelay-ops-'));
        const config: ForwarderConfig = {
          adminToken: ADMIN,
          storage: store === 'postgres' ? { type: store, url: db!.url } : { type: store },
          // A short retry window: a receiver that keeps answering 500 makes a failed delivery in well under a second.
          delivery: { minRetryDelay: 10, maxRetryDelay: 40, retryWindow: 150 },
          sources: [
            { name: 'web', writeKey: 'key-web', destinations: { Webhooks: { sharedSecret: 'secret-web', webhooks: [{ url: `${receiver.url}/web?token=url-secret` }] } } },
            { name: 'flaky', writeKey: 'key-flaky', destinations: { Webhooks: { webhooks: [{ url: `${receiver.url}/flaky` }] } } },
            { name: 'bare', writeKey: 'key-bare' },
          ],
        };
        forwarder = createForwarder(config, { dataDir });
        ({ url } = await forwarder.listen({ port: 0 }));
      });

      after(async () => {
        await forwarder.close();
        await receiver.close();
        rmSync(dataDir, { recursive: true, force: true });
      });

      const send = (key: string, messages: object[]) => post(`${url}/v1/batch`, { batch: messages }, { Authorization: basic(key) });
      const track = (event: string, extra: object = {}) => ({ type: 'track', userId: 'u-ops', event, messageId: `${event}-${store}-${Math.random()}`, ...extra });
      const find = async (query: Record<string, string>) => (await get(`${url}/admin/messages?${new URLSearchParams(query)}`)).json;
      const stateOf = async (source: string, messageId: string) => (await find({ source, messageId })).items[0]?.status;

      it('refuses the log without the admin token', async () => {
        expect((await get(`${url}/admin/messages`, {})).status).to.equal(401);
        expect((await get(`${url}/admin/messages`, { Authorization: 'Bearer wrong' })).status).to.equal(401);
        expect((await get(`${url}/admin/deliveries/1`, {})).status).to.equal(401);
        expect((await post(`${url}/admin/recover`, { source: 'web', since: 0 })).status).to.equal(401);
        expect((await get(`${url}/admin/stream`, {})).status).to.equal(401);
      });

      it('logs a delivered call with its attempt, the URL redacted, and erases the body once delivered', async () => {
        const message = track('Logged');
        expect((await send('key-web', [message])).status).to.equal(200);
        await waitFor(async () => (await stateOf('web', message.messageId)) === 'delivered', 'the log to show it delivered');
        const { items } = await find({ source: 'web', messageId: message.messageId });
        expect(items).to.have.length(1);
        expect(items[0]).to.include({ source: 'web', type: 'track', userId: 'u-ops', status: 'delivered', attempts: 1, series: 1, hasBody: false });
        const detail = await get(`${url}/admin/deliveries/${items[0].id}`);
        expect(detail.status).to.equal(200);
        expect(detail.json.body).to.equal(null);
        expect(detail.json.attemptLog).to.have.length(1);
        const attempt = detail.json.attemptLog[0];
        expect(attempt).to.include({ series: 1, attempt: 1, status: 200, error: null, outcome: 'delivered' });
        expect(attempt.url).to.equal(`${receiver.url}/web?[redacted]`);
        expect(attempt.durationMs).to.be.a('number').at.least(0);
        expect(Date.parse(attempt.at)).to.be.a('number').and.not.NaN;
        expect(detail.text).not.to.contain('url-secret');
      });

      it('records a failed delivery with every attempt and its body, and replays it once the receiver recovers', async () => {
        receiver.failFirst('/flaky', 1000, 500);
        const message = track('Flaky One');
        await send('key-flaky', [message]);
        await waitFor(async () => (await stateOf('flaky', message.messageId)) === 'failed', 'the delivery to fail');
        const { items } = await find({ source: 'flaky', messageId: message.messageId });
        const failed = (await get(`${url}/admin/deliveries/${items[0].id}`)).json;
        expect(failed.status).to.equal('failed');
        expect(failed.attempts).to.be.at.least(2);
        expect(failed.attemptLog).to.have.length(failed.attempts);
        expect(failed.attemptLog.map((a: any) => a.status)).to.satisfy((s: number[]) => s.every((x) => x === 500));
        expect(failed.attemptLog.at(-1).outcome).to.equal('failed');
        expect(failed.reason).to.match(/retry window/);
        expect(JSON.parse(failed.body)).to.include({ type: 'track', event: 'Flaky One', messageId: message.messageId });

        receiver.failFirst('/flaky', 0);
        const replay = await post(`${url}/admin/deliveries/${failed.id}/replay`, {}, auth);
        expect(replay.status).to.equal(202);
        expect(replay.json).to.deep.equal({ id: failed.id, series: 2, state: 'pending' });
        await waitFor(async () => (await stateOf('flaky', message.messageId)) === 'delivered', 'the replay to deliver');
        const after = (await get(`${url}/admin/deliveries/${failed.id}`)).json;
        expect(after.series).to.equal(2);
        expect(after.attemptLog.at(-1)).to.include({ series: 2, attempt: 1, status: 200, outcome: 'delivered' });
        const arrived = receiver.delivered.filter((r) => r.path === '/flaky' && r.json.event === 'Flaky One');
        expect(arrived).to.have.length(1);
        expect(arrived[0]!.json.messageId).to.equal(message.messageId);
      });

      it('answers 409 for a replay of what cannot be replayed, and 404 for an unknown id', async () => {
        const message = track('Delivered Once');
        await send('key-web', [message]);
        await waitFor(async () => (await stateOf('web', message.messageId)) === 'delivered', 'delivery');
        const { items } = await find({ source: 'web', messageId: message.messageId });
        const again = await post(`${url}/admin/deliveries/${items[0].id}/replay`, {}, auth);
        expect(again.status).to.equal(409);
        expect(again.json.error.code).to.equal('not_replayable');
        expect(again.json.error.message).to.match(/keepDelivered/);
        expect((await post(`${url}/admin/deliveries/999999/replay`, {}, auth)).status).to.equal(404);
        expect((await get(`${url}/admin/deliveries/999999`)).status).to.equal(404);
        expect((await get(`${url}/admin/deliveries/abc`)).status).to.equal(400);
      });

      it('answers a malformed delivery id in the path with a 400 naming `id`, from the route\'s schema, on each route that takes one', async () => {
        const refused = [
          await get(`${url}/admin/deliveries/abc`),
          await get(`${url}/admin/deliveries/1234567890123456`),
          await get(`${url}/admin/deliveries/-1`),
          await post(`${url}/admin/deliveries/12x/replay`, {}, auth),
          await post(`${url}/admin/deliveries/%31e3/replay`, {}, auth),
        ];
        for (const answer of refused) {
          expect(answer.status, JSON.stringify(answer.json)).to.equal(400);
          expect(answer.json.error).to.include({ code: 'invalid_request', field: 'id' });
          expect(answer.json.error.problems).to.have.length(1);
          expect(answer.json.error.problems[0].field).to.equal('id');
          expect(answer.json.error.problems[0].message).to.match(/^Expected `id` to be a delivery id \(a positive integer\), got /);
        }
        // Checked once percent-decoded: "1e3" is shown as it was decoded.
        expect(refused[4]!.json.error.message).to.contain('"1e3"');
        // A well-formed id that is not in the log stays a 404, percent-encoded or not.
        expect((await get(`${url}/admin/deliveries/%39%39%39%39%39%39`)).status).to.equal(404);
        expect((await post(`${url}/admin/deliveries/999999/replay`, {}, auth)).status).to.equal(404);
      });

      it('checks a deletion request by its route\'s schema, every problem at once; an unknown source is still named', async () => {
        const bad = await post(`${url}/admin/deletions`, { userId: '', sources: 'web', colour: 'red' }, auth);
        expect(bad.status).to.equal(400);
        expect(bad.json.error.problems.map((p: { field: string }) => p.field).sort()).to.deep.equal(['colour', 'sources', 'userId']);
        const unknown = await post(`${url}/admin/deletions`, { userId: 'u-gone', sources: ['nope'] }, auth);
        expect(unknown.status).to.equal(400);
        expect(unknown.json.error.field).to.equal('sources');
      });

      it('recovers every failed delivery of a source since a time, and answers how many', async () => {
        const since = new Date(Date.now() - 1000).toISOString();
        receiver.failFirst('/flaky', 1000, 503);
        const messages = [track('Recover A'), track('Recover B'), track('Recover C')];
        await send('key-flaky', messages);
        await waitFor(
          async () => (await Promise.all(messages.map((m) => stateOf('flaky', m.messageId)))).every((s) => s === 'failed'),
          'three failed deliveries',
          15_000,
        );
        receiver.failFirst('/flaky', 0);
        const answer = await post(`${url}/admin/recover`, { source: 'flaky', since }, auth);
        expect(answer.status).to.equal(202);
        expect(answer.json).to.include({ source: 'flaky', queued: 3 });
        await waitFor(
          async () => (await Promise.all(messages.map((m) => stateOf('flaky', m.messageId)))).every((s) => s === 'delivered'),
          'the recovered deliveries',
        );
        // Nothing failed is left in that window: a second recovery queues nothing.
        expect((await post(`${url}/admin/recover`, { source: 'flaky', since }, auth)).json.queued).to.equal(0);
        expect((await post(`${url}/admin/recover`, { source: 'nope', since }, auth)).status).to.equal(400);
        expect((await post(`${url}/admin/recover`, { source: 'flaky' }, auth)).json.error.field).to.equal('since');
      });

      it('shows filtered, duplicate and refused calls with why', async () => {
        const off = track('Integrations Off', { integrations: { Webhooks: false } });
        const dup = track('Sent Twice');
        await send('key-web', [off, dup]);
        await send('key-web', [dup]);
        const noDestination = track('No Destination');
        await send('key-bare', [noDestination]);
        expect((await find({ source: 'web', messageId: off.messageId })).items[0]).to.include({ status: 'filtered' });
        expect((await find({ source: 'web', messageId: off.messageId })).items[0].reason).to.match(/integrations/);
        expect((await find({ source: 'bare', messageId: noDestination.messageId })).items[0].reason).to.match(/no Webhooks destination/);
        const twice = (await find({ source: 'web', messageId: dup.messageId })).items;
        expect(twice.map((r: any) => r.status).sort()).to.deep.equal(['duplicate', twice.find((r: any) => r.status !== 'duplicate').status].sort());
        expect(twice[0].status).to.equal('duplicate');

        const refused = await send('key-web', [{ type: 'track', event: 'No User', messageId: `refused-${store}` }]);
        expect(refused.status).to.be.oneOf([200, 400]);
        const rows = (await find({ source: 'web', status: 'refused' })).items;
        expect(rows.length).to.be.at.least(1);
        expect(rows[0].reason).to.match(/userId/);
      });

      it('logs deletion notices and audience identifies as deliveries of their own', async () => {
        const userId = `gone-${store}`;
        expect((await post(`${url}/admin/deletions`, { userId, sources: ['web'] }, auth)).status).to.equal(202);
        expect((await post(`${url}/admin/audiences/sync`, { source: 'web', audience: 'Big Spenders', members: [userId] }, auth)).status).to.equal(200);
        await waitFor(async () => (await find({ userId, status: 'delivered' })).items.length === 2, 'both deliveries');
        const rows = (await find({ userId })).items;
        expect(rows.map((r: any) => [r.kind, r.type, r.source]).sort()).to.deep.equal([
          ['audience', 'identify', 'web'],
          ['delete', 'delete', 'web'],
        ]);
      });

      it('filters by status, type and userId and pages with a cursor, newest first', async () => {
        const user = `pager-${store}`;
        const sent = [1, 2, 3, 4, 5].map((n) => track(`Page ${n}`, { userId: user }));
        for (const m of sent) await send('key-web', [m]);
        await send('key-web', [{ type: 'identify', userId: user, traits: { a: 1 }, messageId: `identify-${user}` }]);
        const first = await find({ userId: user, type: 'track', limit: '2' });
        expect(first.items.map((r: any) => r.messageId)).to.deep.equal([sent[4]!.messageId, sent[3]!.messageId]);
        expect(first.nextCursor).to.be.a('string');
        const second = await find({ userId: user, type: 'track', limit: '2', cursor: first.nextCursor });
        expect(second.items.map((r: any) => r.messageId)).to.deep.equal([sent[2]!.messageId, sent[1]!.messageId]);
        const third = await find({ userId: user, type: 'track', limit: '2', cursor: second.nextCursor });
        expect(third.items.map((r: any) => r.messageId)).to.deep.equal([sent[0]!.messageId]);
        expect(third.nextCursor).to.equal(null);
        expect((await find({ userId: user, type: 'identify' })).items).to.have.length(1);
        await waitFor(async () => (await find({ userId: user, status: 'delivered' })).items.length === 6, 'six delivered');
        expect((await find({ userId: user, until: new Date(Date.now() - 3_600_000).toISOString() })).items).to.have.length(0);
        expect((await find({ userId: user, since: String(Date.now() - 3_600_000) })).items).to.have.length(6);
        const bads: Array<Record<string, string>> = [{ status: 'lost' }, { limit: '0' }, { limit: '501' }, { since: 'yesterday' }, { color: 'red' }, { cursor: '-1' }];
        for (const bad of bads) {
          const answer = await get(`${url}/admin/messages?${new URLSearchParams(bad)}`);
          expect(answer.status, JSON.stringify(bad)).to.equal(400);
          expect(answer.json.error.code).to.equal('invalid_request');
        }
      });

      it('streams accepted calls with their bodies and attempt outcomes live, per source', async () => {
        const message = track('Streamed', { properties: { plan: 'pro' } });
        const other = track('Other Source');
        const events = await readEvents(
          `${url}/admin/stream?source=web`,
          auth,
          async () => {
            await send('key-flaky', [other]);
            await send('key-web', [message]);
          },
          (list) => list.some((e) => e.event === 'attempt' && e.data.messageId === message.messageId),
        );
        const accepted = events.find((e) => e.event === 'accepted' && e.data.messageId === message.messageId);
        expect(accepted?.data).to.include({ source: 'web', type: 'track', userId: 'u-ops', state: 'pending' });
        expect(JSON.parse(accepted!.data.body)).to.deep.include({ event: 'Streamed', properties: { plan: 'pro' } });
        const attempt = events.find((e) => e.event === 'attempt' && e.data.messageId === message.messageId);
        expect(attempt?.data).to.include({ outcome: 'delivered', attempt: 1 });
        expect(attempt?.data.urls[0]).to.include({ status: 200 });
        expect(events.some((e) => e.data.messageId === other.messageId)).to.equal(false);
        const unknown = await get(`${url}/admin/stream?source=nope`);
        expect(unknown.status).to.equal(400);
        expect(unknown.json.error.field).to.equal('source');
      });

      it('reports endpoint health per URL in /stats', async () => {
        const stats = (await get(`${url}/stats`, {})).json;
        const web = stats.endpoints.find((e: any) => e.source === 'web');
        expect(web).to.include({ url: `${receiver.url}/web?[redacted]`, lastStatus: 200, lastError: null, consecutiveFailures: 0 });
        expect(web.successRate).to.equal(1);
        expect(web.p50Ms).to.be.a('number');
        expect(web.p99Ms).to.be.at.least(web.p50Ms);
        const flaky = stats.endpoints.find((e: any) => e.source === 'flaky');
        expect(flaky.successRate).to.be.greaterThan(0).and.lessThan(1);
        expect(JSON.stringify(stats)).not.to.contain('url-secret');
      });

      it('answers the overview: the sources, this one instance, its /stats and the chart of its calls', async () => {
        const summary = (endpoints: any[]) => endpoints.map((e) => [e.source, e.url, e.attempts, e.lastStatus, e.consecutiveFailures]);
        let overview: any;
        let stats: any;
        // Compared once nothing moves between the two answers.
        await waitFor(async () => {
          overview = (await get(`${url}/admin/overview`)).json;
          stats = (await get(`${url}/stats`, {})).json;
          return JSON.stringify(summary(overview.stats.endpoints)) === JSON.stringify(summary(stats.endpoints)) && overview.stats.accepted === stats.accepted;
        }, 'the same endpoint health in both');
        expect(overview.instances).to.equal(1);
        expect(overview.sources).to.include.members(['web', 'flaky', 'bare']);
        expect(overview.stats.endpoints.length).to.be.greaterThan(0);
        expect(overview.chart).to.have.length(60);
        expect(overview.chart.reduce((n: number, p: { accepted: number }) => n + p.accepted, 0)).to.equal(stats.accepted);
      });

      it('serves Prometheus metrics named eventrelay_*, without secrets, URLs or bodies', async () => {
        const metrics = await get(`${url}/metrics`, {});
        expect(metrics.status).to.equal(200);
        expect(metrics.headers.get('content-type')).to.match(/^text\/plain/);
        const text = metrics.text;
        const value = (line: RegExp) => Number(new RegExp(`^${line.source} (\\d+(?:\\.\\d+)?)$`, 'm').exec(text)?.[1]);
        const stats = (await get(`${url}/stats`, {})).json;
        expect(value(/eventrelay_accepted_total\{source="web"\}/)).to.be.greaterThan(5);
        expect(value(/eventrelay_duplicates_total\{source="web"\}/)).to.equal(1);
        expect(value(/eventrelay_refused_total\{source="web"\}/)).to.be.at.least(1);
        expect(value(/eventrelay_failed_total\{source="flaky"\}/)).to.equal(4);
        expect(value(/eventrelay_attempts_total\{source="flaky",outcome="failed"\}/)).to.equal(4);
        expect(value(/eventrelay_attempts_total\{source="flaky",outcome="retry"\}/)).to.be.at.least(4);
        expect(value(/eventrelay_delivered_total\{source="web"\}/)).to.be.at.least(5);
        expect(value(/eventrelay_attempt_duration_seconds_count\{source="web"\}/)).to.be.at.least(5);
        expect(value(/eventrelay_delivery_latency_seconds_count\{source="web"\}/)).to.equal(value(/eventrelay_delivered_total\{source="web"\}/));
        expect(value(/eventrelay_queue_depth/)).to.equal(stats.queueDepth);
        expect(text).to.match(/^eventrelay_oldest_pending_age_seconds \d/m);
        expect(text).to.match(/^eventrelay_in_flight \d/m);
        expect(text).to.match(/^eventrelay_process_cpu_user_seconds_total /m);
        expect(text).to.match(/^eventrelay_nodejs_/m);
        for (const secret of ['key-web', 'secret-web', 'url-secret', receiver.url, 'Streamed', 'u-ops']) expect(text).not.to.contain(secret);
      });
    });
  });
}

describe('forwarder operations options (integration, 127.0.0.1)', () => {
  it('keeps delivered bodies for `storage.keepDelivered`, so a delivered call can be replayed', async () => {
    const receiver = await startReceiver();
    const forwarder = createForwarder({
      adminToken: ADMIN,
      storage: { type: 'memory', keepDelivered: 60_000 },
      sources: [{ name: 'web', writeKey: 'key-web', destinations: { Webhooks: { webhooks: [{ url: `${receiver.url}/keep` }] } } }],
    });
    try {
      const { url } = await forwarder.listen({ port: 0 });
      await post(`${url}/v1/track`, { userId: 'u1', event: 'Kept', messageId: 'kept-1' }, { Authorization: basic('key-web') });
      await waitFor(() => receiver.delivered.length === 1, 'delivery');
      let row: any;
      await waitFor(async () => {
        row = (await get(`${url}/admin/messages?messageId=kept-1`)).json.items[0];
        return row?.status === 'delivered';
      }, 'the log to show it delivered');
      const detail = (await get(`${url}/admin/deliveries/${row.id}`)).json;
      expect(JSON.parse(detail.body)).to.include({ event: 'Kept' });
      expect((await post(`${url}/admin/deliveries/${row.id}/replay`, {}, auth)).status).to.equal(202);
      await waitFor(() => receiver.delivered.length === 2, 'the replayed delivery');
      expect(receiver.delivered[1]!.json.messageId).to.equal('kept-1');
    } finally {
      await forwarder.close();
      await receiver.close();
    }
  });

  it('puts a replayed line back as it was when its delivery cannot be queued, so it can be replayed later', async () => {
    const receiver = await startReceiver();
    // A store that refuses to queue while `broken` is set.
    const store = new (class extends MemoryStore {
      broken = false;
      override async enqueue(deliveries: Parameters<MemoryStore['enqueue']>[0]): Promise<void> {
        if (this.broken) throw new StoreError('The store is unavailable (test)', 'ERR_STORE_UNAVAILABLE');
        return super.enqueue(deliveries);
      }
    })();
    const forwarder = createForwarder(
      {
        adminToken: ADMIN,
        delivery: { minRetryDelay: 10, maxRetryDelay: 40, retryWindow: 150 },
        sources: [{ name: 'web', writeKey: 'key-web', destinations: { Webhooks: { webhooks: [{ url: `${receiver.url}/undo` }] } } }],
      },
      { store },
    );
    try {
      const { url } = await forwarder.listen({ port: 0 });
      receiver.failFirst('/undo', 1000, 500);
      await post(`${url}/v1/track`, { userId: 'u1', event: 'Undo', messageId: 'undo-1' }, { Authorization: basic('key-web') });
      let row: any;
      await waitFor(async () => {
        row = (await get(`${url}/admin/messages?messageId=undo-1`)).json.items[0];
        return row?.status === 'failed';
      }, 'the failed delivery');
      receiver.failFirst('/undo', 0);
      store.broken = true;
      const refused = await post(`${url}/admin/deliveries/${row.id}/replay`, {}, auth);
      expect(refused.status).to.equal(503);
      expect((await get(`${url}/admin/deliveries/${row.id}`)).json).to.include({ status: 'failed', series: 1 });
      store.broken = false;
      expect((await post(`${url}/admin/deliveries/${row.id}/replay`, {}, auth)).status).to.equal(202);
      await waitFor(() => receiver.delivered.some((r) => r.json.messageId === 'undo-1'), 'the replayed delivery');
    } finally {
      await forwarder.close();
      await receiver.close();
    }
  });

  it('keeps the metrics of two forwarders in one process apart; moves or turns off /metrics', async () => {
    const one = createForwarder({ metrics: { path: '/internal/metrics' }, storage: { type: 'memory' }, sources: [{ name: 'one', writeKey: 'k1' }] });
    const two = createForwarder({ metrics: false, storage: { type: 'memory' }, sources: [{ name: 'two', writeKey: 'k2' }] });
    const three = createForwarder({ storage: { type: 'memory' }, sources: [{ name: 'three', writeKey: 'k3' }] });
    try {
      const [a, b, c] = await Promise.all([one.listen({ port: 0 }), two.listen({ port: 0 }), three.listen({ port: 0 })]);
      await post(`${a.url}/v1/track`, { userId: 'u', event: 'E' }, { Authorization: basic('k1') });
      await post(`${c.url}/v1/track`, { userId: 'u', event: 'E' }, { Authorization: basic('k3') });
      await post(`${c.url}/v1/track`, { userId: 'u', event: 'E' }, { Authorization: basic('k3') });
      const first = (await get(`${a.url}/internal/metrics`, {})).text;
      const third = (await get(`${c.url}/metrics`, {})).text;
      expect(first).to.match(/^eventrelay_accepted_total\{source="one"\} 1$/m);
      expect(first).not.to.contain('source="three"');
      expect(third).to.match(/^eventrelay_accepted_total\{source="three"\} 2$/m);
      expect((await get(`${a.url}/metrics`, {})).status).to.equal(404);
      expect((await get(`${b.url}/metrics`, {})).status).to.equal(404);
    } finally {
      await Promise.all([one.close(), two.close(), three.close()]);
    }
  });

  it('answers 403 on the log routes without an adminToken, and ends live streams at close', async () => {
    const forwarder = createForwarder({ storage: { type: 'memory' }, sources: [{ name: 'web', writeKey: 'k' }] });
    const { url } = await forwarder.listen({ port: 0 });
    expect((await get(`${url}/admin/messages`, {})).status).to.equal(403);
    await forwarder.close();

    const withToken = createForwarder({ adminToken: ADMIN, storage: { type: 'memory' }, sources: [{ name: 'web', writeKey: 'k' }] });
    const listening = await withToken.listen({ port: 0 });
    const response = await fetch(`${listening.url}/admin/stream`, { headers: auth });
    const reader = response.body!.getReader();
    await reader.read();
    const closed = withToken.close();
    // The stream ends with the forwarder instead of holding its shutdown.
    for (;;) if ((await reader.read()).done) break;
    await closed;
  });
});
