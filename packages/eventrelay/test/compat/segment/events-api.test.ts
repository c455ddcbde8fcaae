// The listener API of eventrelay/segment's `Analytics`, run side by side with the real
// `@segment/analytics-node` (a dev dependency): what code written for Segment's emitter does
// with `on`, `once`, `off`, `emit` and `maxListeners` must do the same here, now that the
// layer's emitter is the client's own rather than node:events.
import { EventEmitter, once } from 'node:events';
import { Analytics as SegmentAnalytics } from '@segment/analytics-node';
import { expect } from 'chai';
import { Analytics } from '../../../src/compat/segment';

/** The calls the test makes, typed loosely: Segment's emitter only types its own event names. */
interface Listening {
  on(event: string, listener: (...args: unknown[]) => void): Listening;
  once(event: string, listener: (...args: unknown[]) => void): Listening;
  off(event: string, listener: (...args: unknown[]) => void): Listening;
  emit(event: string, ...args: unknown[]): unknown;
  maxListeners: number;
}

interface Pair {
  readonly name: string;
  readonly client: Listening;
  close(): Promise<void>;
}

function pairs(): Pair[] {
  const ours = new Analytics({ writeKey: 'k', disable: true });
  const theirs = new SegmentAnalytics({ writeKey: 'k', disable: true });
  return [
    { name: 'eventrelay/segment', client: ours as unknown as Listening, close: () => ours.closeAndFlush() },
    { name: '@segment/analytics-node', client: theirs as unknown as Listening, close: () => theirs.closeAndFlush() },
  ];
}

/** Runs `fn` with console.warn recorded; resolves with what was written. */
function warnings(fn: () => void): string[] {
  const seen: string[] = [];
  const original = console.warn;
  console.warn = (...args: unknown[]) => void seen.push(args.map(String).join(' '));
  try {
    fn();
  } finally {
    console.warn = original;
  }
  return seen;
}

describe("eventrelay/segment's listener API, beside @segment/analytics-node's", () => {
  let made: Pair[] = [];

  afterEach(async () => {
    await Promise.all(made.map((pair) => pair.close()));
    made = [];
  });

  it('on, once, off and emit call the same listeners in the same order, with the client as `this`', () => {
    made = pairs();
    const runs = made.map(({ client }) => {
      const seen: string[] = [];
      const named = function (this: unknown, n: unknown): void {
        seen.push(`named ${String(n)}${this === client ? ' (this is the client)' : ''}`);
      };
      client.on('custom', named).on('custom', (n) => seen.push(`arrow ${String(n)}`));
      client.once('custom', (n) => seen.push(`once ${String(n)}`));
      client.emit('custom', 1);
      client.emit('custom', 2);
      client.off('custom', named);
      client.emit('custom', 3);
      // Nobody listens: nothing happens, not even for `error` (Segment's emitter never throws it).
      client.emit('error', { code: 'delivery_failure', reason: new Error('x') });
      client.emit('nobody');
      return seen;
    });
    expect(runs[0]).to.deep.equal([
      'named 1 (this is the client)',
      'arrow 1',
      'once 1',
      'named 2 (this is the client)',
      'arrow 2',
      'arrow 3',
    ]);
    expect(runs[0], made[1]!.name).to.deep.equal(runs[1]);
  });

  it("differs where docs/migrating-from-segment.md says: emit's answer, and off() for a listener added twice", () => {
    made = pairs();
    const runs = made.map(({ client }) => {
      let calls = 0;
      const twice = (): void => void calls++;
      client.on('custom', twice).on('custom', twice);
      const emitted = client.emit('custom');
      client.off('custom', twice);
      client.emit('custom');
      return { emitted: emitted === client ? 'the client' : emitted, calls };
    });
    // eventrelay: whether a listener was called, and off() removes the latest registration (as Node).
    expect(runs[0]).to.deep.equal({ emitted: true, calls: 3 });
    // Segment: the emitter itself, and off() removes every registration.
    expect(runs[1], made[1]!.name).to.deep.equal({ emitted: 'the client', calls: 2 });
  });

  it('warns once on the console when an event passes maxListeners (10), and never with maxListeners 0', () => {
    made = [...pairs(), ...pairs()];
    const counts = made.map(({ client }, i) => {
      if (i >= 2) client.maxListeners = 0;
      const atTen = warnings(() => {
        for (let n = 0; n < 10; n++) client.on('track', () => {});
      });
      const after = warnings(() => {
        for (let n = 0; n < 10; n++) client.on('track', () => {});
      });
      return { maxListeners: i >= 2 ? 0 : client.maxListeners, atTen: atTen.length, after: after.length, text: after.join('') };
    });
    expect(counts.map(({ maxListeners, atTen, after }) => ({ maxListeners, atTen, after }))).to.deep.equal([
      { maxListeners: 10, atTen: 0, after: 1 },
      { maxListeners: 10, atTen: 0, after: 1 },
      { maxListeners: 0, atTen: 0, after: 0 },
      { maxListeners: 0, atTen: 0, after: 0 },
    ]);
    expect(counts[0]!.text).to.include('"track"').and.include('maxListeners');
  });

  it("offers Segment's listener methods and the client's, and is no longer a node:events EventEmitter", () => {
    const analytics = new Analytics({ writeKey: 'k', disable: true });
    made = [{ name: 'eventrelay/segment', client: analytics as unknown as Listening, close: () => analytics.closeAndFlush() }];
    const offered = ['on', 'once', 'off', 'emit', 'addListener', 'removeListener', 'removeAllListeners', 'listenerCount', 'listeners'];
    expect(offered.filter((name) => typeof (analytics as unknown as Record<string, unknown>)[name] !== 'function')).to.deep.equal([]);
    expect(analytics).to.not.be.instanceOf(EventEmitter);
    const nodeOnly = ['prependListener', 'prependOnceListener', 'setMaxListeners', 'getMaxListeners', 'eventNames', 'rawListeners'];
    expect(nodeOnly.filter((name) => name in analytics)).to.deep.equal([]);
  });

  it("works with Node's events.once, as when it was an EventEmitter", async () => {
    const analytics = new Analytics({ writeKey: 'k', disable: true });
    made = [{ name: 'eventrelay/segment', client: analytics as unknown as Listening, close: () => analytics.closeAndFlush() }];
    // Node's typings want a whole EventEmitter; at run time `on`, `once` and `removeListener` are what it uses.
    const drained = once(analytics as unknown as EventEmitter, 'drained');
    analytics.track({ userId: 'u1', event: 'E' });
    expect(await drained).to.deep.equal([]);
    expect(analytics.listenerCount('drained')).to.equal(0);
  });
});
