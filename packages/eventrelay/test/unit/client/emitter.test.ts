import { once } from 'node:events';
import type { EventEmitter } from 'node:events';
import { expect } from 'chai';
import { Analytics } from '../../../src/client/analytics';
import { Emitter } from '../../../src/client/emitter';
import { EventRelayError, ValidationError } from '../../../src/errors';
import { FakeTransport } from '../../../../../test/helpers/fake-transport';

type Events = { [event: string]: readonly unknown[]; tick: [n: number] };

describe('Emitter (the events part of the client, without node:events)', () => {
  it('calls listeners in the order they were added, with the arguments of emit', () => {
    const emitter = new Emitter<Events>();
    const seen: string[] = [];
    emitter.on('tick', (n) => seen.push(`a${n}`)).addListener('tick', (n) => seen.push(`b${n}`));
    expect(emitter.emit('tick', 1)).to.equal(true);
    expect(emitter.emit('other' as 'tick', 2)).to.equal(false);
    expect(seen).to.deep.equal(['a1', 'b1']);
    expect(emitter.listenerCount('tick')).to.equal(2);
  });

  it('runs a `once` listener one time, and `off` removes it before that too', () => {
    const emitter = new Emitter<Events>();
    const seen: number[] = [];
    const listener = (n: number): void => void seen.push(n);
    emitter.once('tick', listener);
    emitter.emit('tick', 1);
    emitter.emit('tick', 2);
    emitter.once('tick', listener).off('tick', listener);
    emitter.emit('tick', 3);
    expect(seen).to.deep.equal([1]);
    expect(emitter.listenerCount('tick')).to.equal(0);
  });

  it('removes the most recent registration of a listener, and all of them with removeAllListeners', () => {
    const emitter = new Emitter<Events>();
    const seen: string[] = [];
    const listener = (n: number): void => void seen.push(`l${n}`);
    emitter.on('tick', listener).on('tick', (n) => seen.push(`m${n}`)).on('tick', listener);
    emitter.removeListener('tick', listener);
    emitter.emit('tick', 1);
    expect(seen).to.deep.equal(['l1', 'm1']);
    expect(emitter.listeners('tick')).to.have.length(2);
    emitter.removeAllListeners();
    expect(emitter.emit('tick', 2)).to.equal(false);
  });

  it('calls a listener with the emitter as `this`, as Node does', () => {
    const emitter = new Emitter<Events>();
    const receivers: unknown[] = [];
    emitter.on('tick', function (this: unknown) {
      receivers.push(this);
    });
    emitter.once('tick', function (this: unknown) {
      receivers.push(this);
    });
    emitter.emit('tick', 1);
    expect(receivers).to.have.length(2);
    expect(receivers.every((receiver) => receiver === emitter)).to.equal(true);
  });

  it('refuses a listener that is not a function', () => {
    expect(() => new Emitter<Events>().on('tick', 'nope' as never)).to.throw(TypeError, /must be a function/);
  });

  it("works with Node's events.once, as the client's `error` event did with EventEmitter", async () => {
    const analytics = new Analytics({ writeKey: 'k', endpoint: 'https://ingest.test', transport: new FakeTransport() });
    // Node's typings want a whole EventEmitter; at run time `on`, `once` and `removeListener` are what it uses.
    const next = once(analytics as unknown as EventEmitter, 'error');
    analytics.track({ userId: 'u1' } as never);
    const [error] = (await next) as [EventRelayError];
    expect(error).to.be.instanceOf(ValidationError);
    expect(analytics.listenerCount('error')).to.equal(0);
  });
});
