import { describe, it } from 'mocha';
import { expect } from 'chai';
import fc from 'fast-check';
import {
  BATCH_BOUNDS,
  BATCH_DEFAULTS,
  batchBody,
  BatchBuilder,
  batchEntry,
  batchOf,
  batchText,
  batchTexts,
  checkBatchLimits,
  planBatches,
  splitBatch,
} from '../../src/batch-body';
import type { Batch, BatchEntry, BatchLimits } from '../../src/batch-body';
import { signBody } from '../../src/delivery/signing';
import { serializeWebhookMessage, toWebhookMessage } from '../../../eventrelay/src/messages/webhook';
import { parseWebhookMessages } from '../../../eventrelay/src/webhooks/parse';
import { WEBHOOK_DEFAULTS } from '../../../eventrelay/src/webhooks/options';

const TS = '2026-03-01T12:34:56.789Z';

/** A track call's webhook text, as the destination serializes it. */
function trackText(n: number, extra = ''): string {
  return serializeWebhookMessage(
    toWebhookMessage({ type: 'track', userId: `u${n}`, event: `Event ${n}${extra}`, properties: { n }, timestamp: TS, messageId: `m-${n}` }),
  );
}

const entries = (texts: readonly string[]): BatchEntry<number>[] => texts.map((text, i) => batchEntry(i, text));
const ids = (batch: Batch<number>): number[] => batch.entries.map((e) => e.id);

/** Message texts: JSON values of any shape, unicode included (lone surrogates too: serialized as JSON escapes). */
const texts = fc.array(
  fc.oneof(
    fc.jsonValue({ maxDepth: 2 }).map((value) => JSON.stringify(value)),
    fc.string({ unit: 'grapheme', maxLength: 40 }).map((s) => JSON.stringify({ type: 'track', event: s })),
    fc.string({ unit: 'binary', maxLength: 20 }).map((s) => JSON.stringify(s)),
  ),
  { maxLength: 60 },
);
const limits = fc.record({ maxEvents: fc.integer({ min: 1, max: 12 }), maxBytes: fc.integer({ min: 2, max: 600 }) });

describe('batch bodies (issue 45, the pure part of batched delivery)', () => {
  it('the body is the texts, in order, inside brackets, each exactly as it would go alone', () => {
    const calls = [trackText(1), trackText(2, ' é 🙂'), trackText(3)];
    const [batch] = planBatches(entries(calls), { maxEvents: 10, maxBytes: BATCH_DEFAULTS.maxBytes });
    const body = batchBody(batch!);
    expect(body.toString('utf8')).to.equal(`[${calls.join(',')}]`);
    expect(body.length).to.equal(batch!.bytes);
    // What the receiver helper reads back: the same messages, in order.
    expect(parseWebhookMessages(body)).to.deep.equal(calls.map((text) => JSON.parse(text)));
  });

  it('the largest maxBytes is the receiver helper\'s default maxBodySize, 1 MiB (docs/receiving-webhooks.md#batches)', () => {
    expect(BATCH_BOUNDS.maxBytes).to.equal(WEBHOOK_DEFAULTS.maxBodySize).and.equal(1048576);
    expect(BATCH_DEFAULTS.maxBytes).to.equal(524288);
  });

  it('closes a batch at maxEvents calls', () => {
    const batches = planBatches(entries(Array.from({ length: 7 }, (_, i) => trackText(i))), { maxEvents: 3, maxBytes: BATCH_BOUNDS.maxBytes });
    expect(batches.map(ids)).to.deep.equal([[0, 1, 2], [3, 4, 5], [6]]);
  });

  it('closes a batch before the next call would pass maxBytes, counting brackets, commas and UTF-8 bytes', () => {
    const a = '"ééé"'; // 8 bytes in UTF-8, 5 UTF-16 units
    expect(batchEntry(0, a).bytes).to.equal(8);
    // [a,a] is 2 + 8 + 1 + 8 = 19 bytes.
    expect(planBatches(entries([a, a, a]), { maxEvents: 10, maxBytes: 19 }).map(ids)).to.deep.equal([[0, 1], [2]]);
    expect(planBatches(entries([a, a, a]), { maxEvents: 10, maxBytes: 18 }).map(ids)).to.deep.equal([[0], [1], [2]]);
    expect(planBatches(entries([a, a, a]), { maxEvents: 10, maxBytes: 28 }).map(ids)).to.deep.equal([[0, 1, 2]]);
  });

  it('sends a single call over maxBytes alone, as an array of one, between the batches around it', () => {
    const big = JSON.stringify({ type: 'track', blob: 'x'.repeat(200) });
    const small = '{"n":1}';
    const batches = planBatches(entries([small, small, big, small]), { maxEvents: 10, maxBytes: 100 });
    expect(batches.map(ids)).to.deep.equal([[0, 1], [2], [3]]);
    expect(batchBody(batches[1]!).toString()).to.equal(`[${big}]`);
    expect(batches[1]!.bytes).to.be.above(100);
  });

  it('BatchBuilder: tryAdd answers full (and keeps the batch) when the call does not fit; full tells when nothing more fits', () => {
    const builder = new BatchBuilder<string>({ maxEvents: 2, maxBytes: 1000 });
    expect(builder.take()).to.equal(undefined);
    expect(builder.bytes).to.equal(2);
    expect(builder.tryAdd(batchEntry('a', '{"a":1}'))).to.equal('added');
    expect(builder.full).to.equal(false);
    expect(builder.tryAdd(batchEntry('b', '{"b":2}'))).to.equal('added');
    expect(builder.full).to.equal(true);
    expect(builder.tryAdd(batchEntry('c', '{"c":3}'))).to.equal('full');
    expect(builder.length).to.equal(2);
    const batch = builder.take()!;
    expect(batch.entries.map((e) => e.id)).to.deep.equal(['a', 'b']);
    expect(batchBody(batch).toString()).to.equal('[{"a":1},{"b":2}]');
    expect(builder.length).to.equal(0);
    expect(builder.bytes).to.equal(2);
    // By bytes: the body [x] with x of 7 bytes is 9; a maxBytes of 10 leaves no room for ",y".
    const tight = new BatchBuilder<string>({ maxEvents: 100, maxBytes: 10 });
    tight.tryAdd(batchEntry('x', '{"x":1}'));
    expect(tight.full).to.equal(true);
  });

  it('the same calls in the same order make the same bytes and signature, however often they are planned or split', () => {
    const calls = Array.from({ length: 9 }, (_, i) => trackText(i));
    const limits: BatchLimits = { maxEvents: 4, maxBytes: BATCH_DEFAULTS.maxBytes };
    const first = planBatches(entries(calls), limits).map(batchBody);
    const again = planBatches(entries([...calls]), limits).map(batchBody);
    expect(again.map((b) => b.toString('hex'))).to.deep.equal(first.map((b) => b.toString('hex')));
    expect(again.map((b) => signBody(b, 'secret'))).to.deep.equal(first.map((b) => signBody(b, 'secret')));
    // A retry rebuilt from the stored calls (batchOf) is the same body as the first attempt.
    const [batch] = planBatches(entries(calls), limits);
    expect(batchBody(batchOf(batch!.entries)).equals(batchBody(batch!))).to.equal(true);
  });

  it('splitBatch: halves in order (the first the larger), down to one call, which cannot be split', () => {
    const batch = batchOf(entries(['1', '2', '3', '4', '5']));
    const [left, right] = splitBatch(batch)!;
    expect(ids(left)).to.deep.equal([0, 1, 2]);
    expect(ids(right)).to.deep.equal([3, 4]);
    expect(batchBody(left).toString()).to.equal('[1,2,3]');
    expect(batchBody(right).toString()).to.equal('[4,5]');
    expect(splitBatch(batchOf(entries(['1'])))).to.equal(undefined);
  });

  describe('hostile input', () => {
    it('refuses limits out of bounds, naming the field', () => {
      const bad: [BatchLimits, RegExp][] = [
        [{ maxEvents: 0, maxBytes: 100 }, /`batch.maxEvents` to be an integer from 1 to 4000, got 0/],
        [{ maxEvents: 4001, maxBytes: 100 }, /`batch.maxEvents`.*got 4001/],
        [{ maxEvents: 1.5, maxBytes: 100 }, /`batch.maxEvents`/],
        [{ maxEvents: Number.NaN, maxBytes: 100 }, /`batch.maxEvents`.*got NaN/],
        [{ maxEvents: '10' as unknown as number, maxBytes: 100 }, /`batch.maxEvents`/],
        [{ maxEvents: 10, maxBytes: BATCH_BOUNDS.maxBytes + 1 }, /`batch.maxBytes` to be an integer from 2 to 1048576 \(1 MB\), got 1048577/],
        [{ maxEvents: 10, maxBytes: 1 }, /`batch.maxBytes`/],
        [{ maxEvents: 10, maxBytes: Number.POSITIVE_INFINITY }, /`batch.maxBytes`/],
      ];
      for (const [limits, message] of bad) {
        expect(() => new BatchBuilder(limits)).to.throw(RangeError, message);
        expect(() => planBatches([], limits)).to.throw(RangeError, message);
      }
      expect(checkBatchLimits({ maxEvents: 4000, maxBytes: 1024 * 1024 })).to.deep.equal({ maxEvents: 4000, maxBytes: 1048576 });
    });

    it('refuses an empty text or one that is not a string, and an empty batch', () => {
      expect(() => batchEntry(1, '')).to.throw(TypeError, /empty string/);
      expect(() => batchEntry(1, { type: 'track' } as unknown as string)).to.throw(TypeError, /got object/);
      expect(() => batchOf([])).to.throw(RangeError, /at least one call/);
      expect(planBatches([], { maxEvents: 1, maxBytes: 2 })).to.deep.equal([]);
    });

    it('notices an entry whose size does not match its text instead of sending garbage', () => {
      const forged: BatchEntry<number> = { id: 1, text: '"é"', bytes: 3 };
      expect(() => batchBody(batchOf([forged]))).to.throw(RangeError, /do not match/);
      const over: BatchEntry<number> = { id: 1, text: '"e"', bytes: 9 };
      expect(() => batchBody(batchOf([over]))).to.throw(RangeError, /do not match/);
    });

    it('4000 calls of 261 bytes fill one batch under 1 MB; the 4001st starts the next', () => {
      const text = JSON.stringify({ pad: 'p'.repeat(251) });
      expect(Buffer.byteLength(text)).to.equal(261);
      const batches = planBatches(entries(Array.from({ length: 4001 }, () => text)), { maxEvents: 4000, maxBytes: BATCH_BOUNDS.maxBytes });
      expect(batches.map((b) => b.entries.length)).to.deep.equal([4000, 1]);
      expect(batches[0]!.bytes).to.equal(2 + 4000 * 261 + 3999).and.be.at.most(BATCH_BOUNDS.maxBytes);
      expect(JSON.parse(batchBody(batches[0]!).toString())).to.have.length(4000);
    });
  });

  describe('properties (fast-check)', () => {
    it('planning keeps every call once, in order, and every batch within its limits (but a lone oversized call)', () => {
      fc.assert(
        fc.property(texts, limits, (list, lim) => {
          const batches = planBatches(entries(list), lim);
          expect(batches.flatMap(ids)).to.deep.equal(list.map((_, i) => i));
          for (const batch of batches) {
            expect(batch.entries.length).to.be.within(1, lim.maxEvents);
            if (batch.entries.length > 1) expect(batch.bytes).to.be.at.most(lim.maxBytes);
          }
        }),
      );
    });

    it('each batch is as full as it can be: the next call would have passed a limit', () => {
      fc.assert(
        fc.property(texts, limits, (list, lim) => {
          const batches = planBatches(entries(list), lim);
          for (let i = 0; i + 1 < batches.length; i++) {
            const batch = batches[i]!;
            const next = batches[i + 1]!.entries[0]!;
            expect(batch.entries.length === lim.maxEvents || batch.bytes + 1 + next.bytes > lim.maxBytes).to.equal(true);
          }
        }),
      );
    });

    it('the body is the JSON array of the texts, its length is `bytes`, batchText encodes to it, and it is the same every time', () => {
      fc.assert(
        fc.property(texts, limits, (list, lim) => {
          for (const batch of planBatches(entries(list), lim)) {
            const body = batchBody(batch);
            expect(body.length).to.equal(batch.bytes);
            expect(Buffer.from(batchText(batch), 'utf8').equals(body)).to.equal(true);
            expect(JSON.parse(body.toString('utf8'))).to.deep.equal(batch.entries.map((e) => JSON.parse(e.text)));
            expect(batchBody(batchOf(batch.entries.map((e) => batchEntry(e.id, e.text)))).equals(body)).to.equal(true);
          }
        }),
      );
    });

    it('splitting again and again ends in one call per batch, in order, each half within the parent', () => {
      fc.assert(
        fc.property(texts.filter((l) => l.length > 0), (list) => {
          let pending: Batch<number>[] = [batchOf(entries(list))];
          const singles: number[] = [];
          while (pending.length > 0) {
            const batch = pending.shift()!;
            const halves = splitBatch(batch);
            if (halves === undefined) {
              expect(batch.entries).to.have.length(1);
              singles.push(batch.entries[0]!.id);
              continue;
            }
            const [left, right] = halves;
            expect(left.entries.length - right.entries.length).to.be.within(0, 1);
            expect(left.bytes + right.bytes - 1).to.equal(batch.bytes); // the comma between them becomes two brackets
            expect([...ids(left), ...ids(right)]).to.deep.equal(ids(batch));
            pending = [left, right, ...pending];
          }
          expect(singles).to.deep.equal(list.map((_, i) => i));
        }),
      );
    });

    it('a builder fed one call at a time cuts the same batches as planBatches', () => {
      fc.assert(
        fc.property(texts, limits, (list, lim) => {
          const builder = new BatchBuilder<number>(lim);
          const cut: number[][] = [];
          for (const entry of entries(list)) {
            if (builder.tryAdd(entry) === 'full') {
              cut.push(ids(builder.take()!));
              expect(builder.tryAdd(entry)).to.equal('added');
            }
            if (builder.full) cut.push(ids(builder.take()!));
          }
          const last = builder.take();
          if (last) cut.push(ids(last));
          // Sending as soon as `full` says so never cuts differently from waiting for `tryAdd`'s answer.
          expect(cut).to.deep.equal(planBatches(entries(list), lim).map(ids));
        }),
      );
    });
  });
});

describe('batchTexts: a stored batch body cut back into its calls (for a 413 split)', () => {
  it('gives back exactly the texts joined, whatever they hold (commas, brackets, quotes, escapes in strings)', () => {
    fc.assert(
      fc.property(texts, (list) => {
        if (list.length === 0) return;
        expect(batchTexts(batchText(batchOf(entries(list))))).to.deep.equal(list);
      }),
    );
    const tricky = [JSON.stringify({ a: '],[{"x":1}', b: ['\\"', { c: ',' }] }), JSON.stringify('\\'), '[1,[2,3]]', '{}'];
    expect(batchTexts(batchText(batchOf(entries(tricky))))).to.deep.equal(tricky);
  });

  it('gives undefined for a body that is not one array (a call sent alone), and none for []', () => {
    expect(batchTexts(trackText(1))).to.equal(undefined);
    expect(batchTexts('[{"a":1}')).to.equal(undefined);
    expect(batchTexts('["open]')).to.equal(undefined);
    expect(batchTexts('[]')).to.deep.equal([]);
  });
});
