import { expect } from 'chai';
import { EventRelayError } from '../../../src/errors';
import { createTestClient } from '../../../../../test/helpers/client';
import { deferred } from '../../../../../test/helpers/fake-transport';

describe('Analytics `waitUntil`', () => {
  it('is handed a promise when a batch gets its first message, settled after the batch was sent and its callbacks ran', async () => {
    const handed: Promise<void>[] = [];
    const answer = deferred<number>();
    const { analytics, transport, clock } = createTestClient({ flushAt: 10, waitUntil: (promise) => handed.push(promise) });
    transport.respondWith(() => answer.promise);
    const called: string[] = [];
    analytics.track({ userId: 'u1', event: 'First' }, () => called.push('First'));
    // Before anything is sent: the runtime is told to wait at once, not at the flush.
    expect(handed).to.have.length(1);
    expect(transport.requests).to.have.length(0);
    analytics.track({ userId: 'u1', event: 'Second' }, () => called.push('Second'));
    expect(handed).to.have.length(1);

    let settled = false;
    void handed[0]!.then(() => (settled = true));
    await clock.tick(5000);
    expect(transport.requests).to.have.length(1);
    expect(settled).to.equal(false);
    answer.resolve(200);
    await handed[0];
    expect(called).to.deep.equal(['First', 'Second']);
  });

  it('gets one promise per batch, each settled (never rejected) also when its batch fails', async () => {
    const handed: Promise<void>[] = [];
    const { analytics, transport } = createTestClient({ flushAt: 2, maxRetries: 0, waitUntil: (promise) => handed.push(promise) });
    transport.respondWith((_request, index) => (index === 0 ? 400 : 200));
    const errors: (string | undefined)[] = [];
    for (let i = 0; i < 4; i++) analytics.track({ userId: 'u1', event: `E${i}` }, (error) => errors.push(error?.code));
    expect(handed).to.have.length(2);
    await Promise.all(handed);
    expect(errors).to.deep.equal(['ERR_HTTP', 'ERR_HTTP', undefined, undefined]);
  });

  it('settles at the close timeout with the callbacks that failed', async () => {
    const handed: Promise<void>[] = [];
    const { analytics, transport, clock } = createTestClient({ waitUntil: (promise) => handed.push(promise) });
    transport.respondWith(() => new Promise<number>(() => {}));
    const errors: (string | undefined)[] = [];
    analytics.track({ userId: 'u1', event: 'Stuck' }, (error) => errors.push(error?.code));
    const closed = analytics.closeAndFlush({ timeout: 1000 });
    await clock.tick(1000);
    await closed;
    await handed[0];
    expect(errors).to.deep.equal(['ERR_CLOSE_TIMEOUT']);
  });

  it('is not called for a refused call or with `disable`', async () => {
    const handed: Promise<void>[] = [];
    const { analytics } = createTestClient({ disable: true, waitUntil: (promise) => handed.push(promise) });
    analytics.track({ userId: 'u1', event: 'Not sent' });
    analytics.track({ userId: 'u1' } as never);
    await analytics.flush();
    expect(handed).to.have.length(0);
  });

  it('when it throws, the batch is still sent and the error is emitted once with its cause', async () => {
    const thrown = new Error('waitUntil called outside a request');
    const { analytics, transport } = createTestClient({
      flushAt: 2,
      waitUntil: () => {
        throw thrown;
      },
    });
    const events: EventRelayError[] = [];
    analytics.on('error', (error) => events.push(error));
    const errors: unknown[] = [];
    analytics.track({ userId: 'u1', event: 'A' }, (error) => errors.push(error));
    analytics.track({ userId: 'u1', event: 'B' }, (error) => errors.push(error));
    await analytics.flush();
    expect(transport.messages.map((m) => m.event)).to.deep.equal(['A', 'B']);
    expect(errors).to.deep.equal([undefined, undefined]);
    expect(events).to.have.length(1);
    expect(events[0]).to.include({ code: 'ERR_CALLBACK', cause: thrown });
    expect(events[0]?.message).to.match(/waitUntil/);
  });
});
