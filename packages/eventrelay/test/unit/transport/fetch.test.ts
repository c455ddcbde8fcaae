import { expect } from 'chai';
import { ConfigError, NetworkError, TimeoutError } from '../../../src/errors';
import { FetchTransport } from '../../../src/transport/fetch';
import type { FetchFunction } from '../../../src/transport/fetch';
import type { HttpRequest } from '../../../src/transport/transport';

interface Call {
  readonly url: string;
  readonly init: RequestInit;
}

/** A fetch that records its calls and answers with `answer(call)`. */
function fakeFetch(answer: (call: Call) => Promise<Response> | Response = () => new Response('{}')): { fetch: FetchFunction; calls: Call[] } {
  const calls: Call[] = [];
  return {
    calls,
    fetch: async (url, init) => {
      const call = { url, init };
      calls.push(call);
      return answer(call);
    },
  };
}

const request = (overrides: Partial<HttpRequest> = {}): HttpRequest => ({
  url: new URL('https://ingest.test/v1/batch'),
  headers: { 'content-type': 'application/json' },
  body: '{"batch":[]}',
  timeout: 1000,
  ...overrides,
});

/** A body stream that sends `chunks` and then never ends, until the request's signal aborts it. */
function endless(chunks: string[], signal: AbortSignal | null | undefined): ReadableStream<Uint8Array> {
  return new ReadableStream({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(new TextEncoder().encode(chunk));
      signal?.addEventListener('abort', () => controller.error(signal.reason));
    },
  });
}

describe('FetchTransport', () => {
  it('POSTs the body and headers, does not follow redirects, and answers with the status and Retry-After', async () => {
    const { fetch, calls } = fakeFetch(() => new Response('busy', { status: 503, headers: { 'retry-after': '7' } }));
    const answer = await new FetchTransport({ fetch }).send(request());
    expect(answer).to.deep.equal({ status: 503, retryAfter: '7' });
    expect(calls).to.have.length(1);
    expect(calls[0]?.url).to.equal('https://ingest.test/v1/batch');
    expect(calls[0]?.init).to.include({ method: 'POST', body: '{"batch":[]}', redirect: 'manual' });
    expect(calls[0]?.init.headers).to.deep.equal({ 'content-type': 'application/json' });
    expect(calls[0]?.init.signal).to.be.instanceOf(AbortSignal);
  });

  it("sends a URL's credentials as Basic auth (fetch refuses them in the URL), unless a header sets Authorization", async () => {
    const { fetch, calls } = fakeFetch();
    const transport = new FetchTransport({ fetch });
    await transport.send(request({ url: new URL('https://us%C3%A9r:p%40ss@ingest.test/v1/batch?x=1') }));
    expect(calls[0]?.url).to.equal('https://ingest.test/v1/batch?x=1');
    expect(calls[0]?.init.headers).to.deep.include({ authorization: `Basic ${Buffer.from('usér:p@ss').toString('base64')}` });
    await transport.send(request({ url: new URL('https://u:p@ingest.test/'), headers: { Authorization: 'Basic own' } }));
    expect(calls[1]?.init.headers).to.deep.equal({ Authorization: 'Basic own' });
  });

  it('reads the body when asked, up to maxResponseBytes', async () => {
    const { fetch } = fakeFetch(() => new Response('{"success":true,"rejected":[]}'));
    expect(await new FetchTransport({ fetch }).send(request({ readBody: true }))).to.deep.equal({ status: 200, body: '{"success":true,"rejected":[]}' });
    const capped = await new FetchTransport({ fetch, maxResponseBytes: 8 }).send(request({ readBody: true }));
    expect(capped.body).to.equal('{"succes');
  });

  it('releases an unread body', async () => {
    let cancelled = false;
    const body = new ReadableStream({ cancel: () => void (cancelled = true) });
    const { fetch } = fakeFetch(() => new Response(body));
    expect(await new FetchTransport({ fetch }).send(request())).to.deep.equal({ status: 200 });
    expect(cancelled).to.equal(true);
  });

  it('ends a request that gets no answer at `timeout` with a TimeoutError (the signal aborts it)', async () => {
    const { fetch } = fakeFetch(({ init }) => new Promise<Response>((_resolve, reject) => init.signal?.addEventListener('abort', () => reject(new Error('aborted')))));
    const error = await new FetchTransport({ fetch }).send(request({ timeout: 20 })).then(() => undefined, (e: unknown) => e);
    expect(error).to.be.instanceOf(TimeoutError);
    expect(error).to.include({ code: 'ERR_TIMEOUT' });
  });

  it('answers with the status alone when the body does not finish before the deadline', async () => {
    const { fetch } = fakeFetch(({ init }) => new Response(endless(['{"succ'], init.signal), { status: 200 }));
    expect(await new FetchTransport({ fetch }).send(request({ timeout: 20, readBody: true }))).to.deep.equal({ status: 200 });
  });

  it("rejects a failure with a retryable NetworkError naming the socket's code and the redacted URL only", async () => {
    const { fetch } = fakeFetch(({ url }) => {
      throw new TypeError(`fetch failed for ${url}`, { cause: Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }) });
    });
    const error = await new FetchTransport({ fetch })
      .send(request({ url: new URL('https://user:secret@ingest.test/v1/batch?token=t0ps3cret') }))
      .then(() => undefined, (e: unknown) => e);
    expect(error).to.be.instanceOf(NetworkError);
    expect(error).to.include({ retryable: true, code: 'ERR_NETWORK' });
    expect((error as Error).message).to.equal('Request to https://ingest.test/v1/batch?[redacted] failed: connection refused (ECONNREFUSED)');

    const { fetch: wordy } = fakeFetch(({ url }) => {
      throw new TypeError(`error sending request for url (${url}): connection refused`);
    });
    const named = await new FetchTransport({ fetch: wordy })
      .send(request({ url: new URL('https://ingest.test/v1/batch?token=t0ps3cret') }))
      .then(() => undefined, (e: unknown) => e);
    expect((named as Error).message).not.to.contain('t0ps3cret');
    expect((named as Error).message).to.contain('https://ingest.test/v1/batch?[redacted]');
  });

  it('refuses a certificate error for good (no retry), as NodeTransport does', async () => {
    const { fetch } = fakeFetch(() => {
      throw new TypeError('fetch failed', { cause: Object.assign(new Error('self-signed certificate'), { code: 'DEPTH_ZERO_SELF_SIGNED_CERT' }) });
    });
    const error = await new FetchTransport({ fetch }).send(request()).then(() => undefined, (e: unknown) => e);
    expect(error).to.include({ code: 'ERR_TLS_CERTIFICATE', retryable: false });
  });

  it('takes only a function as `fetch`, and checks maxResponseBytes', () => {
    expect(() => new FetchTransport({ fetch: 'fetch' as never })).to.throw(ConfigError, /`fetch` to be a function/).with.property('field', 'fetch');
    expect(() => new FetchTransport({ maxResponseBytes: -1 })).to.throw(ConfigError, /maxResponseBytes/);
  });

  it('uses the global fetch at each request when none is given', async () => {
    const original = globalThis.fetch;
    const { fetch, calls } = fakeFetch(() => new Response(null, { status: 204 }));
    const transport = new FetchTransport();
    globalThis.fetch = fetch as typeof globalThis.fetch;
    try {
      expect(await transport.send(request())).to.deep.equal({ status: 204 });
      expect(calls).to.have.length(1);
    } finally {
      globalThis.fetch = original;
    }
  });
});
