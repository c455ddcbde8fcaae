import { describe, it, afterEach } from 'mocha';
import { expect } from 'chai';
import { DUPLICATE_REASON } from '../../../src/store/delivery-log';
import type { AttemptRecord, DeliveryLog, LogCall } from '../../../src/store/contract';

export const T0 = Date.UTC(2026, 0, 1);

export function call(messageId: string, extra: Partial<LogCall> = {}): LogCall {
  return {
    source: 'web',
    kind: 'message',
    messageId,
    type: 'track',
    userId: 'u1',
    receivedAt: T0,
    body: `{"messageId":"${messageId}"}`,
    state: 'pending',
    ...extra,
  };
}

export function attempt(messageId: string, n: number, outcome: AttemptRecord['outcome'], at: number, status = outcome === 'delivered' ? 200 : 503): AttemptRecord {
  return {
    source: 'web',
    messageId,
    attempt: n,
    at,
    outcome,
    ...(outcome === 'failed' ? { reason: 'gave up' } : {}),
    urls: [{ url: 'http://hooks.test/in', status, error: null, durationMs: 12 }],
  };
}

/** An attempt whose receiver answered `response` (bytes as the transport keeps them), or did not answer at all (`null`). */
export function answered(messageId: string, n: number, outcome: AttemptRecord['outcome'], at: number, response: string | Buffer | null, status = outcome === 'delivered' ? 200 : 401): AttemptRecord {
  const url =
    response === null
      ? { url: 'http://hooks.test/in', status: null, error: 'ERR_TIMEOUT', durationMs: 5000 }
      : { url: 'http://hooks.test/in', status, error: null, durationMs: 12, response: typeof response === 'string' ? Buffer.from(response) : response };
  return { ...attempt(messageId, n, outcome, at, status), urls: [url] };
}

/** What every DeliveryLog does; `make` gives an empty log. Also run on PostgreSQL (integration). */
export function deliveryLogContract(name: string, make: (keepDelivered: number) => DeliveryLog | Promise<DeliveryLog>): void {
  describe(name, () => {
    let log: DeliveryLog;
    afterEach(() => log?.close());

    const byMessage = async (messageId: string) => (await log.list({ messageId, limit: 10 }))[0]!;

    it('follows a call from pending through a retry to delivered, erasing the body once delivered', async () => {
      log = await make(0);
      log.add([call('m1')]);
      expect(await byMessage('m1')).to.include({ state: 'pending', attempts: 0, series: 1, hasBody: true, finishedAt: null });
      log.attempt(attempt('m1', 1, 'retry', T0 + 10));
      const retrying = await byMessage('m1');
      expect(retrying).to.include({ state: 'retrying', attempts: 1, reason: 'HTTP 503 from http://hooks.test/in' });
      log.attempt(attempt('m1', 2, 'delivered', T0 + 20));
      const detail = (await log.get(retrying.id))!;
      expect(detail).to.include({ state: 'delivered', attempts: 2, finishedAt: T0 + 20, hasBody: false, body: null, reason: null });
      expect(detail.attemptLog.map((a) => [a.series, a.attempt, a.status, a.outcome])).to.deep.equal([
        [1, 1, 503, 'retry'],
        [1, 2, 200, 'delivered'],
      ]);
    });

    it('finishes the open lines of a deleted source as failed, and only those', async () => {
      log = await make(0);
      log.add([call('open'), call('other', { source: 'ios' }), call('done'), call('later')]);
      log.attempt(attempt('done', 1, 'delivered', T0 + 5));
      log.attempt(attempt('later', 1, 'retry', T0 + 6));
      await log.abandon('web', T0 + 10, 'The source was deleted');
      expect(await byMessage('open')).to.include({ state: 'failed', finishedAt: T0 + 10, reason: 'The source was deleted' });
      expect(await byMessage('later')).to.include({ state: 'failed', attempts: 1, reason: 'The source was deleted' });
      expect(await byMessage('done')).to.include({ state: 'delivered', finishedAt: T0 + 5 });
      expect(await byMessage('other')).to.include({ state: 'pending', source: 'ios' });
    });

    it('shows a call attempted before its line was written (one flush) like one written first', async () => {
      log = await make(0);
      log.add([call('quick'), call('slow'), call('kept')]);
      log.attempt(attempt('quick', 1, 'delivered', T0 + 5));
      log.attempt(attempt('slow', 1, 'retry', T0 + 5));
      log.attempt(attempt('kept', 1, 'failed', T0 + 6));
      const quick = (await log.get((await byMessage('quick')).id))!;
      expect(quick).to.include({ state: 'delivered', attempts: 1, finishedAt: T0 + 5, updatedAt: T0 + 5, body: null, hasBody: false });
      expect(quick.attemptLog.map((a) => [a.attempt, a.status, a.outcome])).to.deep.equal([[1, 200, 'delivered']]);
      expect(await byMessage('slow')).to.include({ state: 'retrying', attempts: 1, finishedAt: null, hasBody: true, reason: 'HTTP 503 from http://hooks.test/in' });
      expect(await byMessage('kept')).to.include({ state: 'failed', attempts: 1, hasBody: true, reason: 'gave up' });
      // Later attempts go to the same lines.
      log.attempt(attempt('slow', 2, 'delivered', T0 + 50));
      const slow = (await log.get((await byMessage('slow')).id))!;
      expect(slow).to.include({ state: 'delivered', attempts: 2, body: null });
      expect(slow.attemptLog.map((a) => a.outcome)).to.deep.equal(['retry', 'delivered']);
      expect((await log.failed('web', T0, T0 + 1)).map((d) => d.messageId)).to.deep.equal(['kept']);
    });

    it('logs calls with hostile ids (U+0000, lone surrogates) without losing the lines written with them', async () => {
      log = await make(0);
      log.add([call('nul\u0000id', { userId: 'user\ud800' }), call('plain')]);
      log.attempt(attempt('nul\u0000id', 1, 'delivered', T0 + 10));
      log.attempt(attempt('plain', 1, 'delivered', T0 + 10));
      const lines = await log.list({ limit: 10 });
      expect(lines.map((l) => [l.state, l.attempts])).to.deep.equal([
        ['delivered', 1],
        ['delivered', 1],
      ]);
      // Found again by the id it was sent with (a store may keep U+FFFD in its place).
      expect(await byMessage('nul\u0000id')).to.include({ state: 'delivered' });
    });

    it('keeps a failed body, lists it for recovery, and starts a new series on replay', async () => {
      log = await make(0);
      log.add([call('f1'), call('f2', { receivedAt: T0 + 5000 })]);
      log.attempt(attempt('f1', 1, 'failed', T0 + 10));
      log.attempt(attempt('f2', 1, 'failed', T0 + 5010));
      const failed = await log.failed('web', T0, T0 + 1000);
      expect(failed.map((d) => d.messageId)).to.deep.equal(['f1']);
      expect(failed[0]!.body).to.equal('{"messageId":"f1"}');
      expect(await log.failed('other', T0, T0 + 10_000)).to.deep.equal([]);

      const [replayed] = await log.replay([failed[0]!.id], T0 + 100);
      expect(replayed).to.deep.equal({ id: failed[0]!.id, series: 2, before: { state: 'failed', updatedAt: T0 + 10, finishedAt: T0 + 10, reason: 'gave up' } });
      expect(await byMessage('f1')).to.include({ state: 'pending', series: 2, finishedAt: null });
      // Pending again: a second replay changes nothing.
      expect(await log.replay([failed[0]!.id], T0 + 101)).to.deep.equal([]);
      log.attempt(attempt('f1', 1, 'delivered', T0 + 110));
      const detail = (await log.get(failed[0]!.id))!;
      expect(detail).to.include({ state: 'delivered', attempts: 2, series: 2 });
      expect(detail.attemptLog.map((a) => [a.series, a.attempt])).to.deep.equal([
        [1, 1],
        [2, 1],
      ]);
    });

    it('replays only failed lines, and delivered ones with a body; unreplay puts a line back as it was', async () => {
      log = await make(60_000);
      log.add([call('r-failed'), call('r-delivered'), call('r-pending'), call('r-filtered', { state: 'filtered', body: undefined, reason: 'off' })]);
      log.attempt(attempt('r-failed', 1, 'failed', T0 + 10));
      log.attempt(attempt('r-delivered', 1, 'delivered', T0 + 20));
      const ids = new Map((await log.list({ source: 'web', limit: 10 })).map((row) => [row.messageId, row.id]));
      const lines = await log.replay([...ids.values()], T0 + 100);
      expect(lines.map((l) => l.id).sort()).to.deep.equal([ids.get('r-failed'), ids.get('r-delivered')].sort());
      expect(await byMessage('r-delivered')).to.include({ state: 'pending', series: 2 });
      await log.unreplay(lines);
      expect(await byMessage('r-failed')).to.include({ state: 'failed', series: 1, finishedAt: T0 + 10, updatedAt: T0 + 10, reason: 'gave up' });
      expect(await byMessage('r-delivered')).to.include({ state: 'delivered', series: 1, finishedAt: T0 + 20 });
      expect(await byMessage('r-pending')).to.include({ state: 'pending', series: 1 });
      expect(await byMessage('r-filtered')).to.include({ state: 'filtered', series: 1 });
    });

    it('logs a duplicate call finished, and sends a later attempt to the call that was routed', async () => {
      log = await make(0);
      log.add([call('d1')]);
      log.add([call('d1', { state: 'duplicate', body: undefined, reason: DUPLICATE_REASON }), call('d2')]);
      const rows = await log.list({ source: 'web', limit: 10 });
      expect(rows.map((r) => [r.messageId, r.state])).to.deep.equal([
        ['d2', 'pending'],
        ['d1', 'duplicate'],
        ['d1', 'pending'],
      ]);
      expect(rows[1]).to.include({ hasBody: false, reason: DUPLICATE_REASON, finishedAt: T0 });
      // The attempt goes to the call that was routed, not to its duplicate.
      log.attempt(attempt('d1', 1, 'delivered', T0 + 1));
      expect((await log.list({ messageId: 'd1', limit: 10 })).map((r) => r.state)).to.deep.equal(['duplicate', 'delivered']);
    });

    it('sends an attempt to the line it was made on when a newer line of its messageId comes in the same flush', async () => {
      log = await make(0);
      log.add([call('again')]);
      await log.list({ limit: 1 });
      // The retention forgot the messageId: a client sends it again while the first call's attempt is being written.
      log.attempt(attempt('again', 1, 'delivered', T0 + 5));
      log.add([call('again', { receivedAt: T0 + 10 })]);
      const lines = await log.list({ messageId: 'again', limit: 10 });
      expect(lines.map((l) => [l.receivedAt, l.state, l.attempts])).to.deep.equal([
        [T0 + 10, 'pending', 0],
        [T0, 'delivered', 1],
      ]);
    });

    it('stores filtered and refused calls as finished, with why and without a body', async () => {
      log = await make(0);
      log.add([call('x1', { state: 'filtered', body: undefined, reason: 'integrations' })]);
      log.add([call('r1', { state: 'refused', body: undefined, type: undefined, reason: 'invalid_message (userId): no user' })]);
      expect(await byMessage('x1')).to.include({ state: 'filtered', hasBody: false, finishedAt: T0, reason: 'integrations' });
      expect(await byMessage('r1')).to.include({ state: 'refused', type: null, reason: 'invalid_message (userId): no user' });
    });

    it('filters and pages newest first with a cursor', async () => {
      log = await make(0);
      log.add(Array.from({ length: 7 }, (_, i) => call(`p${i}`, { receivedAt: T0 + i * 1000, userId: i % 2 === 0 ? 'even' : 'odd', type: i < 5 ? 'track' : 'page' })));
      const page1 = await log.list({ limit: 3 });
      expect(page1.map((r) => r.messageId)).to.deep.equal(['p6', 'p5', 'p4']);
      const page2 = await log.list({ limit: 3, beforeId: page1.at(-1)!.id });
      expect(page2.map((r) => r.messageId)).to.deep.equal(['p3', 'p2', 'p1']);
      expect((await log.list({ limit: 10, userId: 'even', type: 'track' })).map((r) => r.messageId)).to.deep.equal(['p4', 'p2', 'p0']);
      expect((await log.list({ limit: 10, since: T0 + 2000, until: T0 + 4000 })).map((r) => r.messageId)).to.deep.equal(['p3', 'p2']);
      expect(await log.list({ limit: 10, state: 'delivered' })).to.deep.equal([]);
    });

    it('prunes what finished before the retention and erases delivered bodies after keepDelivered', async () => {
      log = await make(60_000);
      log.add([call('old'), call('kept'), call('open')]);
      log.attempt(attempt('old', 1, 'failed', T0 + 10));
      log.attempt(attempt('kept', 1, 'delivered', T0 + 100_000));
      expect(await byMessage('kept')).to.include({ hasBody: true });
      const removed = await log.prune(T0 + 50_000, T0 + 120_000);
      expect(removed).to.be.at.least(1);
      expect(await byMessage('old')).to.equal(undefined);
      expect(await byMessage('open')).to.include({ state: 'pending', hasBody: true });
      // Delivered 20 s before "now", kept for 60 s: still there.
      expect(await byMessage('kept')).to.include({ hasBody: true });
      await log.prune(T0 + 50_000, T0 + 200_000);
      expect(await byMessage('kept')).to.include({ state: 'delivered', hasBody: false });
    });

    it("keeps each attempt's answer: the first 2,048 bytes as text, null without one (attempts in the flush of their call, and after)", async () => {
      log = await make(60_000);
      log.add([call('m1')]);
      // In the flush that writes the call: folded into its line.
      log.attempt(answered('m1', 1, 'retry', T0 + 10, 'bad signature'));
      const id = (await byMessage('m1')).id;
      // Written after the line: the update appends them.
      log.attempt(answered('m1', 2, 'retry', T0 + 20, null));
      log.attempt(answered('m1', 3, 'retry', T0 + 30, Buffer.from('x'.repeat(2047) + 'é' + 'y'.repeat(900)), 500));
      log.attempt(answered('m1', 4, 'retry', T0 + 40, Buffer.alloc(0), 503));
      log.attempt(answered('m1', 5, 'delivered', T0 + 50, '{"ok":true}\n'));
      const detail = (await log.get(id))!;
      expect(detail.attemptLog.map((a) => [a.attempt, a.status, a.error, a.responseBody?.slice(0, 20) ?? null])).to.deep.equal([
        [1, 401, null, 'bad signature'],
        [2, null, 'ERR_TIMEOUT', null],
        [3, 500, null, 'xxxxxxxxxxxxxxxxxxxx'],
        [4, 503, null, null],
        [5, 200, null, '{"ok":true}\n'],
      ]);
      // 2,048 bytes: the 'é' cut in two shows as U+FFFD.
      expect(detail.attemptLog[2]!.responseBody).to.equal('x'.repeat(2047) + '\ufffd');
      // A replay's series keeps its own answers.
      expect(await log.replay([id], T0 + 60)).to.have.length(1);
      log.attempt(answered('m1', 1, 'retry', T0 + 70, 'still bad'));
      const after = (await log.get(id))!;
      expect(after.attemptLog.map((a) => [a.series, a.attempt, a.responseBody?.slice(0, 13) ?? null])).to.deep.equal([
        [1, 1, 'bad signature'],
        [1, 2, null],
        [1, 3, 'xxxxxxxxxxxxx'],
        [1, 4, null],
        [1, 5, '{"ok":true}\n'],
        [2, 1, 'still bad'],
      ]);
    });

    it('erases the answers with the body: when delivered (keepDelivered 0), in the flush of their call or after', async () => {
      log = await make(0);
      log.add([call('quick'), call('slow')]);
      log.attempt(answered('quick', 1, 'retry', T0 + 5, 'bad signature'));
      log.attempt(answered('quick', 2, 'delivered', T0 + 6, 'thanks'));
      log.attempt(answered('slow', 1, 'retry', T0 + 5, 'bad signature'));
      const slowId = (await byMessage('slow')).id;
      expect((await log.get(slowId))!.attemptLog.map((a) => a.responseBody)).to.deep.equal(['bad signature']);
      log.attempt(answered('slow', 2, 'delivered', T0 + 7, 'thanks'));
      for (const messageId of ['quick', 'slow']) {
        const detail = (await log.get((await byMessage(messageId)).id))!;
        expect(detail).to.include({ state: 'delivered', body: null });
        expect(detail.attemptLog.map((a) => [a.status, a.responseBody])).to.deep.equal([
          [401, null],
          [200, null],
        ]);
      }
    });

    it('erases the answers with the body after keepDelivered; a failed line keeps both', async () => {
      log = await make(60_000);
      log.add([call('kept'), call('failed')]);
      log.attempt(answered('kept', 1, 'retry', T0 + 10, 'bad signature'));
      log.attempt(answered('failed', 1, 'failed', T0 + 10, 'no such user'));
      const keptId = (await byMessage('kept')).id;
      log.attempt(answered('kept', 2, 'delivered', T0 + 100_000, 'thanks'));
      await log.prune(T0, T0 + 120_000);
      expect((await log.get(keptId))!.attemptLog.map((a) => a.responseBody)).to.deep.equal(['bad signature', 'thanks']);
      await log.prune(T0, T0 + 200_000);
      const erased = (await log.get(keptId))!;
      expect(erased).to.include({ body: null, hasBody: false });
      expect(erased.attemptLog.map((a) => a.responseBody)).to.deep.equal([null, null]);
      const failed = (await log.get((await byMessage('failed')).id))!;
      expect(failed.hasBody).to.equal(true);
      expect(failed.attemptLog.map((a) => a.responseBody)).to.deep.equal(['no such user']);
    });

    it('keeps the track event name of each call, and finds calls by it (exactly)', async () => {
      log = await make(0);
      log.add([
        call('t1', { event: 'Order Completed' }),
        call('t2', { event: 'Order Completed ' }),
        call('t3', { event: 'order completed' }),
        call('i1', { type: 'identify' }),
        call('r1', { event: 'Order Completed', state: 'refused', reason: 'bad', body: undefined }),
      ]);
      log.attempt(attempt('t1', 1, 'delivered', T0 + 5));
      const found = await log.list({ event: 'Order Completed', limit: 10 });
      expect(found.map((m) => [m.messageId, m.event])).to.deep.equal([
        ['r1', 'Order Completed'],
        ['t1', 'Order Completed'],
      ]);
      expect(await log.list({ event: 'Order Completed', state: 'delivered', limit: 10 })).to.have.length(1);
      expect((await byMessage('i1')).event).to.equal(null);
      expect((await byMessage('t3')).event).to.equal('order completed');
      expect((await log.get(found[1]!.id))!.event).to.equal('Order Completed');
      expect(await log.list({ event: 'Signed Up', limit: 10 })).to.deep.equal([]);
    });
  });
}
