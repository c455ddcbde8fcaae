import { describe, it, afterEach } from 'mocha';
import { expect } from 'chai';
import { BufferedDeliveryLog, HOLD_LINES, HOLD_MS } from '../../../src/store/buffered-log';
import type { LogOp } from '../../../src/store/buffered-log';
import { attempt, call, T0 } from './delivery-log-contract';

/** A buffer whose commits are recorded: each flush's writes, as `calls:a,b` and `attempt:a` in order. */
class Recorder extends BufferedDeliveryLog {
  readonly flushes: { ops: string[]; at: number }[] = [];
  private waiters: (() => void)[] = [];

  constructor(holdMs = HOLD_MS) {
    super(holdMs);
  }

  flush(): void {
    const ops = this.take();
    if (ops.length === 0) return;
    this.flushes.push({ ops: ops.map(describeOp), at: Date.now() });
    for (const wake of this.waiters.splice(0)) wake();
  }

  /** A flush called directly (as close does): everything, now. */
  flushNow(): void {
    this.flush();
  }

  /** Resolves when a flush has written something. */
  nextFlush(): Promise<void> {
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  read(): Promise<void> {
    return this.drain();
  }

  close(): void {
    this.flushNow();
    this.closed = true;
  }
}

function describeOp(op: LogOp): string {
  return op.op === 'calls' ? `calls:${op.calls.map((c) => c.messageId).join(',')}` : `attempt:${op.record.messageId}`;
}

describe('BufferedDeliveryLog with a hold (the PostgreSQL log): a call waits for its first attempt, so its line is written once', () => {
  const logs: Recorder[] = [];
  afterEach(() => {
    for (const log of logs.splice(0)) log.close();
  });
  const open = (holdMs = HOLD_MS) => {
    const log = new Recorder(holdMs);
    logs.push(log);
    return log;
  };

  it('writes a call with the attempt that came after the first timed flush, in one commit', async () => {
    const log = open();
    log.add([call('a'), call('b')]);
    log.attempt(attempt('unrelated', 2, 'delivered', T0 + 1));
    // The first timed flush writes the attempt on a line written before, and holds both calls.
    await log.nextFlush();
    expect(log.flushes.map((f) => f.ops)).to.deep.equal([['attempt:unrelated']]);
    log.attempt(attempt('a', 1, 'delivered', T0 + 200));
    log.attempt(attempt('b', 1, 'retry', T0 + 200));
    // A later attempt on b, while it still waits, joins it too, after the first.
    log.attempt(attempt('b', 2, 'delivered', T0 + 300));
    await log.nextFlush();
    expect(log.flushes[1]!.ops).to.deep.equal(['calls:a,b', 'attempt:a', 'attempt:b', 'attempt:b']);
    // Once written, its attempts go alone.
    log.attempt(attempt('b', 3, 'delivered', T0 + 400));
    await log.nextFlush();
    expect(log.flushes[2]!.ops).to.deep.equal(['attempt:b']);
  });

  it('keeps the order of the calls: one still waiting holds those after it, attempted or not', async () => {
    const log = open();
    log.add([call('first')]);
    log.add([call('second')]);
    log.attempt(attempt('second', 1, 'delivered', T0 + 5));
    log.attempt(attempt('elsewhere', 1, 'delivered', T0 + 5));
    await log.nextFlush();
    expect(log.flushes[0]!.ops).to.deep.equal(['attempt:elsewhere']);
    log.attempt(attempt('first', 1, 'delivered', T0 + 9));
    await log.nextFlush();
    expect(log.flushes[1]!.ops).to.deep.equal(['calls:first', 'attempt:first', 'calls:second', 'attempt:second']);
  });

  it('does not hold calls that get no attempt (duplicates, filtered, refused)', async () => {
    const log = open();
    log.add([call('d', { state: 'duplicate' }), call('f', { state: 'filtered', reason: 'rule' }), call('r', { state: 'refused', reason: 'bad' })]);
    await log.nextFlush();
    expect(log.flushes[0]!.ops).to.deep.equal(['calls:d,f,r']);
  });

  it('writes a call pending once it has waited its hold without an attempt; a later attempt follows alone', async () => {
    // The mechanism with a hold of 1 s (HOLD_MS, the default, is 5 s: a burst's deliveries lag by seconds).
    const log = open(1000);
    const added = Date.now();
    log.add([call('slow')]);
    await log.nextFlush();
    expect(log.flushes[0]!.ops).to.deep.equal(['calls:slow']);
    expect(log.flushes[0]!.at - added).to.be.at.least(1000);
    log.attempt(attempt('slow', 1, 'delivered', T0 + 5000));
    await log.nextFlush();
    expect(log.flushes[1]!.ops).to.deep.equal(['attempt:slow']);
  });

  it('writes everything at once for a read or a direct flush, waiting calls included', async () => {
    const log = open();
    log.add([call('a')]);
    log.attempt(attempt('x', 1, 'delivered', T0 + 1));
    log.add([call('b')]);
    await log.read();
    expect(log.flushes).to.have.length(1);
    expect(log.flushes[0]!.ops).to.deep.equal(['calls:a', 'attempt:x', 'calls:b']);
    // The calls are no longer waiting: their attempts go alone.
    log.attempt(attempt('a', 1, 'delivered', T0 + 9));
    log.flushNow();
    expect(log.flushes[1]!.ops).to.deep.equal(['attempt:a']);
  });

  it(`holds at most ${HOLD_LINES} lines: past it, the oldest calls are written pending without waiting`, async () => {
    const log = open();
    const batch = (n: number) => Array.from({ length: 1000 }, (_, i) => call(`m${n}-${i}`));
    for (let n = 0; n <= HOLD_LINES / 1000; n++) log.add(batch(n));
    await log.nextFlush();
    // The first commit takes the oldest calls, unattempted, until the buffer is back within the bound.
    expect(log.flushes[0]!.ops).to.deep.equal([`calls:${batch(0).map((c) => c.messageId).join(',')}`]);
    // The rest wait again: nothing more is written until an attempt or the hold's end.
    log.attempt(attempt('m1-0', 1, 'delivered', T0 + 1));
    log.flushNow();
    expect(log.flushes[1]!.ops.slice(0, 2)).to.deep.equal([`calls:${batch(1).map((c) => c.messageId).join(',')}`, 'attempt:m1-0']);
    expect(log.flushes[1]!.ops).to.have.length(HOLD_LINES / 1000 + 1);
  });

  it('holds nothing without a hold (the SQLite log): calls go with the first timed flush, attempts after them', async () => {
    const log = open(0);
    log.add([call('a')]);
    await log.nextFlush();
    expect(log.flushes[0]!.ops).to.deep.equal(['calls:a']);
    log.attempt(attempt('a', 1, 'delivered', T0 + 5));
    await log.nextFlush();
    expect(log.flushes[1]!.ops).to.deep.equal(['attempt:a']);
  });
});
