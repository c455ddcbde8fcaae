// Ported from Segment's analytics-next packages/node: emitter.integration.test.ts,
// disable.integration.test.ts and http-client.integration.test.ts, rewritten for mocha.
// Adapted: header names are eventrelay's (lower case; `user-agent: eventrelay-node/<version>`),
// the body carries no `writeKey`, `context.library` names eventrelay, and `http_request`
// shows `authorization` without its credentials. Retries use eventrelay's `minRetryDelay`
// (an eventrelay extra) so the retry test is fast.
import { expect } from 'chai';
import { FetchHTTPClient, type HTTPFetchRequest, type HttpRequestEvent } from '../../../src/compat/segment';
import { VERSION } from '../../../src/version';
import { createSegmentClient, failure, ok, RecordingHttpClient } from '../helpers';

function checkRequestEvent(event: HttpRequestEvent): void {
  const body = JSON.parse(event.body) as { batch: unknown[] };
  expect(body.batch).to.be.an('array').with.length(1);
  expect(event.headers).to.be.an('object');
  expect(event.method).to.equal('POST');
  expect(event.url).to.be.a('string');
}

describe('eventrelay/segment http_request event', () => {
  it('is emitted once for a delivered batch', async () => {
    const { analytics } = createSegmentClient();
    const seen: HttpRequestEvent[] = [];
    analytics.on('http_request', (e: HttpRequestEvent) => seen.push(e));
    await new Promise((resolve) => analytics.track({ anonymousId: 'foo', event: 'bar' }, resolve));
    expect(seen).to.have.length(1);
    checkRequestEvent(seen[0]!);
  });

  it('is emitted for a failed batch', async () => {
    const { analytics } = createSegmentClient({ maxRetries: 0 }, { withError: true });
    const seen: HttpRequestEvent[] = [];
    analytics.on('http_request', (e: HttpRequestEvent) => seen.push(e));
    await new Promise((resolve) => analytics.track({ anonymousId: 'foo', event: 'bar' }, resolve));
    expect(seen).to.have.length(1);
    checkRequestEvent(seen[0]!);
  });

  it('is emitted on every retry', async () => {
    const http = new RecordingHttpClient(() => failure(500, 'Internal Server Error'));
    const { analytics } = createSegmentClient({ maxRetries: 2, httpClient: http });
    let count = 0;
    analytics.on('http_request', () => count++);
    await new Promise((resolve) => analytics.track({ anonymousId: 'foo', event: 'bar' }, resolve));
    expect(count).to.equal(3);
    expect(http.requests).to.have.length(3);
  });

  it('never shows the write key: authorization keeps its scheme only', async () => {
    const { analytics, http } = createSegmentClient({ writeKey: 'secret-write-key' });
    const seen: HttpRequestEvent[] = [];
    analytics.on('http_request', (e: HttpRequestEvent) => seen.push(e));
    await new Promise((resolve) => analytics.track({ anonymousId: 'foo', event: 'bar' }, resolve));
    expect(seen[0]!.headers.authorization).to.equal('Basic [redacted]');
    expect(JSON.stringify(seen[0])).not.to.include(Buffer.from('secret-write-key:').toString('base64'));
    // The HTTP client itself gets the real credentials.
    expect(http.requests[0]!.headers.authorization).to.equal(`Basic ${Buffer.from('secret-write-key:').toString('base64')}`);
  });

  it('http_response carries the status of each answer', async () => {
    const { analytics } = createSegmentClient();
    const statuses: number[] = [];
    analytics.on('http_response', (e: { status: number }) => statuses.push(e.status));
    await new Promise((resolve) => analytics.track({ anonymousId: 'foo', event: 'bar' }, resolve));
    expect(statuses).to.deep.equal([200]);
  });
});

describe('eventrelay/segment disable', () => {
  it('emits no http_request when disabled', async () => {
    const { analytics } = createSegmentClient({ disable: true });
    let count = 0;
    analytics.on('http_request', () => count++);
    await new Promise((resolve) => analytics.track({ anonymousId: 'foo', event: 'bar' }, resolve));
    expect(count).to.equal(0);
  });

  it('calls the HTTP client when disable is false', async () => {
    const http = new RecordingHttpClient();
    const { analytics } = createSegmentClient({ disable: false, httpClient: http });
    await new Promise((resolve) => analytics.track({ anonymousId: 'foo', event: 'bar' }, resolve));
    expect(http.requests).to.have.length(1);
  });

  it('does not call the HTTP client when disable is true, and still emits the call event', async () => {
    const http = new RecordingHttpClient();
    const { analytics } = createSegmentClient({ disable: true, httpClient: http });
    let tracked = 0;
    analytics.on('track', () => tracked++);
    const err = await new Promise((resolve) => analytics.track({ anonymousId: 'foo', event: 'bar' }, resolve));
    expect(err).to.equal(undefined);
    expect(tracked).to.equal(1);
    expect(http.requests).to.have.length(0);
  });
});

describe('eventrelay/segment httpClient setting', () => {
  function recordingFetch() {
    const calls: [string, HTTPFetchRequest][] = [];
    const fetchFn = async (url: string, init: HTTPFetchRequest) => {
      calls.push([url, init]);
      return ok();
    };
    return { calls, fetchFn };
  }

  function checkFetchCall([url, init]: [string, HTTPFetchRequest]): void {
    expect(url).to.equal('https://api.segment.io/v1/batch');
    expect(init.headers).to.deep.equal({
      authorization: 'Basic Zm9vOg==',
      'content-type': 'application/json',
      'user-agent': `eventrelay-node/${VERSION}`,
    });
    expect(init.method).to.equal('POST');
    const batch = (JSON.parse(init.body) as { batch: Record<string, unknown>[] }).batch;
    expect(batch).to.have.length(1);
    expect(batch[0]).to.deep.include({ properties: {}, event: 'foo', type: 'track', userId: 'bar', integrations: {} });
    expect(batch[0]!.timestamp).to.match(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    expect(batch[0]!.messageId).to.be.a('string');
    expect(batch[0]!.context).to.deep.equal({ library: { name: 'eventrelay', version: VERSION } });
    expect(init.signal).to.be.instanceOf(AbortSignal);
  }

  it('can be a custom HTTP client object (FetchHTTPClient around a fetch function)', async () => {
    const { calls, fetchFn } = recordingFetch();
    const { analytics } = createSegmentClient({ httpClient: new FetchHTTPClient(fetchFn) });
    expect(calls).to.have.length(0);
    await new Promise((resolve) => analytics.track({ event: 'foo', userId: 'bar' }, resolve));
    expect(calls).to.have.length(1);
    checkFetchCall(calls[0]!);
  });

  it('can be a plain function with the fetch signature', async () => {
    const { calls, fetchFn } = recordingFetch();
    const { analytics } = createSegmentClient({ httpClient: fetchFn });
    await new Promise((resolve) => analytics.track({ event: 'foo', userId: 'bar' }, resolve));
    expect(calls).to.have.length(1);
    checkFetchCall(calls[0]!);
  });

  it('aborts a fetch that outlives httpRequestTimeout and retries it as a timeout', async () => {
    let attempts = 0;
    const hanging = (_url: string, init: HTTPFetchRequest) =>
      new Promise<never>((_resolve, reject) => {
        attempts++;
        init.signal.addEventListener('abort', () => reject(Object.assign(new Error('aborted'), { name: 'AbortError' })));
      });
    const { analytics } = createSegmentClient({ httpClient: hanging, httpRequestTimeout: 20, maxRetries: 1 });
    const err = await new Promise((resolve) => analytics.track({ event: 'foo', userId: 'bar' }, resolve));
    expect(err).to.have.property('code', 'ERR_TIMEOUT');
    expect(attempts).to.equal(2);
  });
});
