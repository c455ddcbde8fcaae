import { describe, it, afterEach } from 'mocha';
import { expect } from 'chai';
import { CloseTimeoutError, HttpError, NetworkError, ValidationError } from '../../../src/errors';
import { toNetworkError } from '../../../src/transport/network-errors';
import { createTestClient } from '../../../../../test/helpers/client';
import { flushMicrotasks } from '../../../../../test/helpers/fake-clock';

interface Warned {
  readonly message: string;
  readonly type: string | undefined;
  readonly code: string | undefined;
}

type EmitWarning = typeof process.emitWarning;

/** Records the client's warnings in place of `process.emitWarning` (nothing printed). */
function recordWarnings(): Warned[] {
  const seen: Warned[] = [];
  const original = process.emitWarning;
  restore.push(() => (process.emitWarning = original));
  process.emitWarning = ((message: string | Error, options?: { type?: string; code?: string }) => {
    seen.push({ message: String(message), type: options?.type, code: options?.code });
  }) as EmitWarning;
  return seen;
}

const restore: (() => void)[] = [];
afterEach(() => {
  for (const undo of restore.splice(0).reverse()) undo();
});

/** What a connection to a port nobody listens on throws, as the transports report it. */
const econnrefused = () =>
  toNetworkError(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9'), { code: 'ECONNREFUSED' }), 'https://ingest.test/v1/batch');

describe('a client that tells: errors nobody hears become warnings', () => {
  it('a track() without userId, with no callback and no listener, is a Node warning naming the field and how to listen, once per error code', async () => {
    const warnings = recordWarnings();
    const { analytics } = createTestClient();
    analytics.track({ event: 'Signed Up' } as never);
    analytics.track({ event: 'Again' } as never);
    expect(warnings).to.have.length(1);
    expect(warnings[0]).to.deep.include({ type: 'EventRelayWarning', code: 'ERR_VALIDATION' });
    expect(warnings[0]!.message).to.include('userId').and.include('anonymousId').and.include('(field `userId`)');
    expect(warnings[0]!.message).to.include("analytics.on('error', (error, messageId) => ...)").and.include('pass a callback');
    // Another code is another warning, once too.
    await analytics.closeAndFlush();
    analytics.track({ userId: 'u', event: 'Late' });
    analytics.track({ userId: 'u', event: 'Later' });
    expect(warnings.map((w) => w.code)).to.deep.equal(['ERR_VALIDATION', 'ERR_CLIENT_CLOSED']);
  });

  it('is a real process warning: process.on("warning") gets an EventRelayWarning with the code', async () => {
    const got: Error[] = [];
    const listener = (warning: Error) => got.push(warning);
    process.on('warning', listener);
    restore.push(() => process.off('warning', listener));
    const { analytics } = createTestClient();
    analytics.track({ userId: 'u' } as never);
    // Node emits 'warning' on the next tick.
    await new Promise((resolve) => process.nextTick(resolve));
    const ours = got.filter((w) => w.name === 'EventRelayWarning');
    expect(ours).to.have.length(1);
    expect((ours[0] as Error & { code?: string }).code).to.equal('ERR_VALIDATION');
    expect(ours[0]!.message).to.include('`event`');
  });

  it('no warning when a callback or an error listener hears the error', async () => {
    const warnings = recordWarnings();
    const withCallback = createTestClient().analytics;
    const heard: unknown[] = [];
    withCallback.track({ event: 'E' } as never, (error) => heard.push(error));
    const withListener = createTestClient().analytics;
    withListener.on('error', (error) => heard.push(error));
    withListener.track({ event: 'E' } as never);
    await flushMicrotasks();
    expect(heard.map((e) => (e as ValidationError).code)).to.deep.equal(['ERR_VALIDATION', 'ERR_VALIDATION']);
    expect(warnings).to.deep.equal([]);
  });

  it('a failed batch some of whose messages have no callback is a warning; one whose every message has a callback is not', async () => {
    const warnings = recordWarnings();
    const all = createTestClient({ maxRetries: 0 });
    all.transport.respondWith(() => 401);
    const codes: (string | undefined)[] = [];
    all.analytics.track({ userId: 'u', event: 'E' }, (error) => codes.push((error as HttpError | undefined)?.code));
    await all.analytics.flush();
    expect(codes).to.deep.equal(['ERR_HTTP']);
    expect(warnings).to.deep.equal([]);

    const some = createTestClient({ maxRetries: 0 });
    some.transport.respondWith(() => 401);
    some.analytics.track({ userId: 'u', event: 'E' }, () => {});
    some.analytics.track({ userId: 'u', event: 'F' });
    await some.analytics.flush();
    expect(warnings).to.have.length(1);
    expect(warnings[0]!.code).to.equal('ERR_HTTP');
    expect(warnings[0]!.message).to.include('answered 401').and.include('check the write key');
    expect(warnings[0]!.message).not.to.include('test-write-key');
  });

  it('where the runtime has no process.emitWarning, the warning is one console.warn line', () => {
    const lines: string[] = [];
    const original = process.emitWarning;
    const warn = console.warn;
    restore.push(() => {
      process.emitWarning = original;
      console.warn = warn;
    });
    (process as { emitWarning?: unknown }).emitWarning = undefined;
    console.warn = (...args: unknown[]) => void lines.push(args.join(' '));
    const { analytics } = createTestClient();
    analytics.group({ userId: 'u' } as never);
    analytics.group({ userId: 'u' } as never);
    expect(lines).to.have.length(1);
    expect(lines[0]).to.match(/^EventRelayWarning \[ERR_VALIDATION\]: .*groupId/);
  });
});

describe('a client that tells: network errors at once, and the close timeout names the cause', () => {
  it('emits the first network error of a send at once, while its retries go on behind it', async () => {
    const { analytics, transport, clock } = createTestClient({ minRetryDelay: 1000, maxRetryDelay: 1000, maxRetries: 3 });
    transport.respondWith((_r, index) => (index < 3 ? econnrefused() : 200));
    const events: NetworkError[] = [];
    analytics.on('error', (error) => events.push(error as NetworkError));
    const results: unknown[] = [];
    analytics.track({ userId: 'u', event: 'E' }, (error) => results.push(error ?? 'delivered'));
    void analytics.flush();
    await flushMicrotasks();
    // One attempt made: the error is out now, the callback waits for the retries.
    expect(transport.requests).to.have.length(1);
    expect(events).to.have.length(1);
    expect(events[0]).to.be.instanceOf(NetworkError);
    expect(events[0]).to.include({ code: 'ERR_NETWORK', retryable: true });
    expect(events[0]!.message).to.include('connection refused (ECONNREFUSED)').and.include('retrying (up to 3 times').and.include('not failed yet');
    expect((events[0]!.cause as NetworkError).message).to.include('ECONNREFUSED');
    expect(results).to.deep.equal([]);
    // The retries go on: the second failure is not told again, the fourth attempt delivers.
    await clock.tick(5000);
    expect(transport.requests).to.have.length(4);
    expect(results).to.deep.equal(['delivered']);
    expect(events).to.have.length(1);
  });

  it('without a listener, that first network error is a warning at once', async () => {
    const warnings = recordWarnings();
    const { analytics, transport } = createTestClient({ minRetryDelay: 60_000, maxRetryDelay: 60_000 });
    transport.respondWith(() => econnrefused());
    analytics.track({ userId: 'u', event: 'E' });
    void analytics.flush();
    await flushMicrotasks();
    expect(transport.requests).to.have.length(1);
    expect(warnings).to.have.length(1);
    expect(warnings[0]!.code).to.equal('ERR_NETWORK');
    expect(warnings[0]!.message).to.include('https://ingest.test/v1/batch failed: connection refused (ECONNREFUSED)');
  });

  it("closeAndFlush's timeout error names the last cause (ECONNREFUSED), in the message and as cause", async () => {
    const { analytics, transport, clock } = createTestClient({ minRetryDelay: 500, maxRetryDelay: 500 });
    transport.respondWith(() => econnrefused());
    const calls: unknown[] = [];
    const events: unknown[] = [];
    analytics.on('error', (error) => events.push(error));
    analytics.track({ userId: 'u', event: 'E' }, (error) => calls.push(error));
    const closing = analytics.closeAndFlush({ timeout: 2000 });
    await clock.tick(2000);
    await closing;
    expect(calls).to.have.length(1);
    const error = calls[0] as CloseTimeoutError;
    expect(error).to.be.instanceOf(CloseTimeoutError);
    expect(error.message).to.include('closeAndFlush() timed out after 2000 ms').and.include('its last attempt failed: ERR_NETWORK: ').and.include('ECONNREFUSED');
    expect(error.cause).to.be.instanceOf(NetworkError);
    const told = events.filter((e) => e instanceof CloseTimeoutError) as CloseTimeoutError[];
    expect(told).to.have.length(1);
    expect(told[0]!.message).to.include('ECONNREFUSED');
  });

  it('a close timeout with no failed attempt (a request still waiting) says only that it timed out', async () => {
    const { analytics, transport, clock } = createTestClient();
    transport.respondWith(() => new Promise(() => {}));
    const calls: unknown[] = [];
    analytics.track({ userId: 'u', event: 'E' }, (error) => calls.push(error));
    const closing = analytics.closeAndFlush({ timeout: 1000 });
    await clock.tick(1000);
    await closing;
    expect((calls[0] as CloseTimeoutError).message).not.to.include('last attempt');
    expect((calls[0] as CloseTimeoutError).cause).to.equal(undefined);
  });
});

describe('a client that tells: an endpoint ending in /v1', () => {
  for (const [endpoint, sent] of [
    ['https://ingest.test/v1', 'https://ingest.test/v1/batch'],
    ['https://ingest.test/v1/', 'https://ingest.test/v1/batch'],
    ['https://ingest.test/v1/batch', 'https://ingest.test/v1/batch'],
    ['https://ingest.test/api/v1', 'https://ingest.test/api/v1/batch'],
    ['https://ingest.test/api', 'https://ingest.test/api/v1/batch'],
    ['https://ingest.test', 'https://ingest.test/v1/batch'],
  ] as const) {
    it(`${endpoint} sends to ${sent}`, async () => {
      const { analytics, transport } = createTestClient({ endpoint });
      analytics.track({ userId: 'u', event: 'E' });
      await analytics.flush();
      expect(transport.requests.map((r) => r.url.href)).to.deep.equal([sent]);
    });
  }

  it('an explicit path is added as given', async () => {
    const { analytics, transport } = createTestClient({ endpoint: 'https://ingest.test/v1', path: '/batch' });
    analytics.track({ userId: 'u', event: 'E' });
    await analytics.flush();
    expect(transport.requests[0]!.url.href).to.equal('https://ingest.test/v1/batch');
  });
});
