import { expect } from 'chai';
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Analytics } from '../../../src/client/analytics';
import { Analytics as SegmentAnalytics } from '../../../src/compat/segment/index';
import { Analytics as ClassicAnalytics } from '../../../src/compat/analytics-node/index';
import { ConfigError, HttpError, QueueFullError, SpoolError, type EventRelayError } from '../../../src/errors';
import { FILE_HEADER_BYTES, FORMAT_VERSION, crc32, fileHeader, scanRecords } from '../../../src/client/spool/format';
import type { SpoolRecovery } from '../../../src/client/spool/spool';
import type { AnalyticsOptions } from '../../../src/client/options';
import { FakeClock } from '../../../../../test/helpers/fake-clock';
import { FakeTransport, deferred } from '../../../../../test/helpers/fake-transport';
import { useTempDirs } from '../../../../../test/helpers/temp-dir';
import { FaultyFs, deadOwner, runtimeWith } from './spool-seams';

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** The messages the segment files of `dir` hold (acked ones left out), parsed. */
function spooled(dir: string): Record<string, unknown>[] {
  return readdirSync(dir)
    .filter((name) => name.endsWith('.seg'))
    .sort()
    .flatMap((name) => scanRecords(readFileSync(join(dir, name)), crc32).messages.map((m) => JSON.parse(m.json) as Record<string, unknown>));
}

describe('Analytics with a spool', () => {
  const tempDir = useTempDirs('eventrelay-spool-client-');
  const clients: Analytics[] = [];
  afterEach(async () => {
    for (const client of clients.splice(0)) await client.closeAndFlush({ timeout: 10 });
  });

  function client(dir: string, transport = new FakeTransport(), options: Partial<AnalyticsOptions> = {}, fs?: FaultyFs) {
    const analytics = new Analytics(
      { writeKey: 'k', endpoint: 'https://ingest.test', transport, spool: { dir }, ...options },
      { clock: new FakeClock(), random: () => 0.5, spool: fs ? { runtime: runtimeWith(fs) } : {} },
    );
    clients.push(analytics);
    const errors: EventRelayError[] = [];
    const recoveries: SpoolRecovery[] = [];
    analytics.on('error', (error) => errors.push(error));
    analytics.on('recover', (info) => recoveries.push(info));
    return { analytics, transport, errors, recoveries };
  }

  describe('options', () => {
    const make = (spool: unknown) => () => new Analytics({ writeKey: 'k', endpoint: 'https://ingest.test', spool } as unknown as AnalyticsOptions);
    const field = (spool: unknown): string | undefined => {
      try {
        make(spool)();
      } catch (error) {
        expect(error).to.be.instanceOf(ConfigError);
        return (error as ConfigError).field;
      }
      return 'no error';
    };

    it('refuses what is not a spool setting with a ConfigError naming the field', () => {
      expect(field('/tmp/spool')).to.equal('spool');
      expect(field({})).to.equal('spool.dir');
      expect(field({ dir: '  ' })).to.equal('spool.dir');
      expect(field({ dir: tempDir(), maxBytes: 1000 })).to.equal('spool.maxBytes');
      expect(field({ dir: tempDir(), maxBytes: 1.5e6 + 0.5 })).to.equal('spool.maxBytes');
      expect(field({ dir: tempDir(), sync: 'sometimes' })).to.equal('spool.sync');
      expect(field({ dir: tempDir(), maxSize: 10 })).to.equal('spool.maxSize');
    });

    it('refuses a dir that cannot be created, at construction, naming spool.dir', () => {
      const file = join(tempDir(), 'a-file');
      writeFileSync(file, 'not a directory');
      expect(field({ dir: join(file, 'spool') })).to.equal('spool.dir');
      try {
        make({ dir: join(file, 'spool') })();
      } catch (error) {
        expect((error as Error).message).to.contain('ENOTDIR').and.contain(file);
      }
    });

    it('opens nothing with disable: true (nothing is sent, so nothing is kept)', () => {
      const dir = tempDir();
      const { analytics } = client(dir, new FakeTransport(), { disable: true });
      analytics.track({ userId: 'u', event: 'E' });
      expect(readdirSync(dir)).to.deep.equal([]);
    });
  });

  it('has every accepted call in a file before the next turn, with its messageId, and removes it once delivered', async () => {
    const dir = tempDir();
    const transport = new FakeTransport();
    const { analytics } = client(dir, transport);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) analytics.track({ userId: 'u', event: `E${i}`, messageId: `id-${i}` });
    for (let i = 0; i < 5; i++) ids.push(`id-${i}`);
    await nextTurn();
    expect(spooled(dir).map((m) => m.messageId)).to.deep.equal(ids);
    await analytics.flush();
    await nextTurn();
    expect(transport.messages.map((m) => m.messageId)).to.deep.equal(ids);
    expect(spooled(dir)).to.deep.equal([]);
  });

  it('a later client on the dir sends what an earlier one could not, with the same messageIds, and says how many and from when', async () => {
    const dir = tempDir();
    const down = new FakeTransport(() => 503);
    const first = client(dir, down, { maxRetries: 0 });
    const codes: (string | undefined)[] = [];
    for (let i = 0; i < 3; i++) first.analytics.track({ userId: 'u', event: 'Kept', messageId: `kept-${i}` }, (error) => codes.push(error?.code));
    await first.analytics.closeAndFlush();
    expect(codes).to.deep.equal(['ERR_HTTP', 'ERR_HTTP', 'ERR_HTTP']);
    expect(spooled(dir)).to.have.length(3);

    const second = client(dir);
    await nextTurn();
    await second.analytics.flush();
    expect(second.recoveries).to.have.length(1);
    expect(second.recoveries[0]).to.include({ messages: 3, files: 1 });
    expect(second.recoveries[0]!.since).to.deep.equal(new Date('2026-01-01T00:00:00.000Z'));
    expect(second.transport.messages.map((m) => m.messageId)).to.deep.equal(['kept-0', 'kept-1', 'kept-2']);
    // The same bytes: the body carries the JSON made at call time.
    expect(second.transport.messages.map((m) => m.timestamp)).to.deep.equal(down.messages.slice(0, 3).map((m) => m.timestamp));
    expect(second.analytics.pending).to.equal(0);
    await second.analytics.closeAndFlush();
    expect(readdirSync(dir)).to.deep.equal([]);
  });

  it('removes the messages of a batch answered 2xx, those the answer lists in `rejected` too', async () => {
    const dir = tempDir();
    const body = JSON.stringify({ success: true, rejected: [{ index: 0, code: 'invalid', field: 'userId', message: 'no' }] });
    const { analytics } = client(dir, new FakeTransport(() => ({ status: 200, body })));
    const codes: (string | undefined)[] = [];
    analytics.track({ userId: 'u', event: 'Refused' }, (error) => codes.push(error?.code));
    analytics.track({ userId: 'u', event: 'Taken' }, (error) => codes.push(error?.code));
    await nextTurn();
    expect(spooled(dir)).to.have.length(2);
    await analytics.flush();
    await nextTurn();
    expect(codes).to.deep.equal(['ERR_VALIDATION', undefined]);
    expect(spooled(dir)).to.deep.equal([]);
  });

  it('sends again, without calling back twice, what failed once the endpoint answers again', async () => {
    const dir = tempDir();
    let up = false;
    const transport = new FakeTransport(() => (up ? 200 : 503));
    const { analytics } = client(dir, transport, { maxRetries: 0, flushAt: 2 });
    const results: (string | undefined)[] = [];
    analytics.track({ userId: 'u', event: 'E', messageId: 'a' }, (error) => results.push(error?.code));
    analytics.track({ userId: 'u', event: 'E', messageId: 'b' }, (error) => results.push(error?.code));
    await analytics.flush();
    up = true;
    analytics.track({ userId: 'u', event: 'E', messageId: 'c' }, (error) => results.push(error?.code));
    await analytics.flush();
    await analytics.flush();
    expect(results).to.deep.equal(['ERR_HTTP', 'ERR_HTTP', undefined]);
    expect(transport.messages.map((m) => m.messageId)).to.deep.equal(['a', 'b', 'c', 'a', 'b']);
    await nextTurn();
    expect(spooled(dir)).to.deep.equal([]);
  });

  it('past spool.maxBytes, refuses a call with QueueFullError through the callback and error, and keeps the others', async () => {
    const dir = tempDir();
    const never = deferred<number>();
    const { analytics, errors } = client(dir, new FakeTransport(() => never.promise), { spool: { dir, maxBytes: 65_536 } });
    const outcomes: (EventRelayError | undefined)[] = [];
    const big = 'x'.repeat(8000);
    for (let i = 0; i < 12; i++) analytics.track({ userId: 'u', event: 'Big', properties: { big } }, (error) => outcomes.push(error));
    await nextTurn();
    const refused = outcomes.filter((e): e is EventRelayError => e !== undefined);
    expect(refused.length).to.be.within(1, 5);
    for (const error of refused) expect(error).to.be.instanceOf(QueueFullError).and.include({ code: 'ERR_QUEUE_FULL', maxBytes: 65_536 });
    expect(refused[0]!.message).to.contain('spool.maxBytes');
    expect(errors.filter((e) => e instanceof QueueFullError)).to.have.length(refused.length);
    expect(analytics.pending).to.equal(12 - refused.length);
    expect(spooled(dir)).to.have.length(12 - refused.length);
    never.resolve(200);
  });

  it('a call the disk does not take is refused: its callback and `error` get ERR_SPOOL_WRITE, and it is never sent', async () => {
    const dir = tempDir();
    const fs = new FaultyFs();
    const { analytics, transport, errors } = client(dir, new FakeTransport(), {}, fs);
    const reported: (string | undefined)[] = [];
    analytics.on('error', (_error, id) => reported.push(id));
    await nextTurn();
    fs.fail('writeSync', 'ENOSPC');
    const results: { error: EventRelayError | undefined; id: string | undefined }[] = [];
    for (const messageId of ['a', 'b']) analytics.track({ userId: 'u', event: 'E', messageId }, (error, id) => results.push({ error, id }));
    // No throw into the caller; the call is counted until the turn's write told its fate.
    expect(analytics.pending).to.equal(2);
    await analytics.flush();
    await nextTurn();
    expect(results.map((r) => [r.id, r.error?.code])).to.deep.equal([['a', 'ERR_SPOOL_WRITE'], ['b', 'ERR_SPOOL_WRITE']]);
    expect(results[0]!.error).to.be.instanceOf(SpoolError);
    expect(errors.map((e) => e.code)).to.deep.equal(['ERR_SPOOL_WRITE', 'ERR_SPOOL_WRITE']);
    expect(reported).to.deep.equal(['a', 'b']);
    expect(transport.requests).to.deep.equal([]);
    expect(analytics.pending).to.equal(0);
    // Accepted again, and on disk, as soon as a write succeeds.
    fs.heal();
    analytics.track({ userId: 'u', event: 'E', messageId: 'c' }, (error, id) => results.push({ error, id }));
    await nextTurn();
    expect(spooled(dir).map((m) => m.messageId)).to.deep.equal(['c']);
    await analytics.flush();
    expect(results[2]).to.deep.equal({ error: undefined, id: 'c' });
    expect(transport.messages.map((m) => m.messageId)).to.deep.equal(['c']);
  });

  it("with onWriteError: 'memory', such a call is sent from memory; `error` says, per call, that it is not durable", async () => {
    const dir = tempDir();
    const fs = new FaultyFs();
    const { analytics, transport, errors } = client(dir, new FakeTransport(), { spool: { dir, onWriteError: 'memory' } }, fs);
    const reported: (string | undefined)[] = [];
    analytics.on('error', (_error, id) => reported.push(id));
    await nextTurn();
    fs.fail('writeSync', 'ENOSPC');
    const results: unknown[] = [];
    analytics.track({ userId: 'u', event: 'E', messageId: 'kept' }, (error) => results.push(error));
    await analytics.flush();
    expect(results).to.deep.equal([undefined]);
    expect(transport.messages.map((m) => m.messageId)).to.deep.equal(['kept']);
    expect(errors).to.have.length(1);
    expect(errors[0]).to.be.instanceOf(SpoolError).and.include({ code: 'ERR_SPOOL_NOT_DURABLE' });
    expect(errors[0]!.message).to.contain('memory');
    expect(reported).to.deep.equal(['kept']);
  });

  it('flush() sends the calls of the current turn (they are batched after its write)', async () => {
    const dir = tempDir();
    const { analytics, transport } = client(dir);
    analytics.track({ userId: 'u', event: 'E', messageId: 'same-turn' });
    await analytics.flush();
    expect(transport.messages.map((m) => m.messageId)).to.deep.equal(['same-turn']);
  });

  it('closeAndFlush() sends what it took over from a killed process, with its own calls, even when called in the same turn', async () => {
    const dir = tempDir();
    const left = Array.from({ length: 1000 }, (_, i) => JSON.stringify({ type: 'track', messageId: `left-${i}`, userId: 'u', event: 'E' }));
    deadOwner(dir, left);
    const transport = new FakeTransport();
    const { analytics, recoveries } = client(dir, transport, { flushAt: 1000 });
    const own: unknown[] = [];
    analytics.track({ userId: 'u', event: 'Now', messageId: 'own' }, (error) => own.push(error));
    await analytics.closeAndFlush();
    expect(recoveries.map((r) => r.messages)).to.deep.equal([1000]);
    expect(own).to.deep.equal([undefined]);
    const sent = transport.messages.map((m) => m.messageId as string);
    expect(sent).to.have.length(1001);
    expect(new Set(sent)).to.deep.equal(new Set(['own', ...left.map((_, i) => `left-${i}`)]));
    expect(readdirSync(dir)).to.deep.equal([]);
  });

  it('reports a file of a newer format version through error, and leaves it as it was', async () => {
    const dir = tempDir();
    const dead = deadOwner(dir, ['{"type":"track","messageId":"future"}']);
    const newer = Buffer.concat([fileHeader(FORMAT_VERSION + 1), readFileSync(dead.path).subarray(FILE_HEADER_BYTES)]);
    writeFileSync(dead.path, newer);
    const { errors, transport } = client(dir);
    await nextTurn();
    expect(errors.map((e) => e.code)).to.deep.equal(['ERR_SPOOL_VERSION']);
    expect(transport.requests).to.deep.equal([]);
    expect(readFileSync(dead.path).equals(newer)).to.equal(true);
  });

  it('a message the endpoint refuses for good (413 alone) leaves the spool; the client sends on', async () => {
    const dir = tempDir();
    const transport = new FakeTransport((request) => (String(request.body).length > 2000 ? 413 : 200));
    const { analytics } = client(dir, transport);
    const results: (string | undefined)[] = [];
    analytics.track({ userId: 'u', event: 'Huge', properties: { pad: 'x'.repeat(3000) } }, (error) => results.push(error?.code));
    analytics.track({ userId: 'u', event: 'Small' }, (error) => results.push(error?.code));
    await analytics.flush();
    expect(results.sort()).to.deep.equal(['ERR_PAYLOAD_TOO_LARGE', undefined]);
    await nextTurn();
    expect(spooled(dir)).to.deep.equal([]);
  });

  it('a final refusal (401) is kept for the next client, not sent again by this one', async () => {
    const dir = tempDir();
    const transport = new FakeTransport(() => 401);
    const { analytics } = client(dir, transport, { flushAt: 1 });
    const results: unknown[] = [];
    analytics.track({ userId: 'u', event: 'E', messageId: 'locked-out' }, (error) => results.push(error));
    await analytics.flush();
    expect(results[0]).to.be.instanceOf(HttpError).and.include({ status: 401 });
    await analytics.closeAndFlush();
    expect(transport.requests).to.have.length(1);
    expect(spooled(dir).map((m) => m.messageId)).to.deep.equal(['locked-out']);
  });

  describe('in the Segment drop-in layers', () => {
    it('eventrelay/segment takes `spool` and forwards what the spool reports', async () => {
      const dir = tempDir();
      deadOwner(dir, ['{"type":"track","messageId":"left-behind","userId":"u","event":"E"}']);
      const transport = new FakeTransport();
      const segment = new SegmentAnalytics({ writeKey: 'k', host: 'https://ingest.test', transport, spool: { dir } });
      const recovered: unknown[] = [];
      segment.on('recover' as never, (info: unknown) => recovered.push(info));
      segment.track({ userId: 'u', event: 'Now', messageId: 'now' });
      await nextTurn();
      expect(spooled(dir).map((m) => m.messageId)).to.include('now');
      await segment.closeAndFlush();
      expect(recovered).to.have.length(1);
      expect(transport.messages.map((m) => m.messageId).sort()).to.deep.equal(['left-behind', 'now']);
      expect(readdirSync(dir)).to.deep.equal([]);
    });

    it('eventrelay/analytics-node takes `spool`; its errors reach errorHandler', async () => {
      const dir = tempDir();
      deadOwner(dir, ['{"type":"track","messageId":"x"}']);
      const stale = readdirSync(dir).find((n) => n.endsWith('.seg'))!;
      writeFileSync(join(dir, stale), fileHeader(FORMAT_VERSION + 1));
      const handled: unknown[] = [];
      const answer = deferred<number>();
      const transport = new FakeTransport(() => answer.promise);
      const classic = new ClassicAnalytics('k', { host: 'https://ingest.test', transport, spool: { dir }, errorHandler: (error) => handled.push(error) });
      classic.track({ userId: 'u', event: 'Now', messageId: 'classic' });
      await nextTurn();
      expect(spooled(dir).map((m) => m.messageId)).to.include('classic');
      answer.resolve(200);
      await classic.flush();
      expect(transport.messages.map((m) => m.messageId)).to.deep.equal(['classic']);
      expect(handled).to.have.length(1);
      expect(handled[0]).to.be.instanceOf(SpoolError).and.include({ code: 'ERR_SPOOL_VERSION' });
    });
  });
});
