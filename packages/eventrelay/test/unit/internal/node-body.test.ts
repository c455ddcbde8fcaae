import { describe, it } from 'mocha';
import { expect } from 'chai';
import type { IncomingMessage } from 'node:http';
import { PassThrough } from 'node:stream';
import { readNodeRequest } from '../../../src/internal/node-body';
import { readNodeBody } from '../../../src/webhooks/adapters/node-body';
import { NetworkError, PayloadTooLargeError } from '../../../src/errors';

/** A stand-in for a Node request: a stream with headers. */
function fakeRequest(headers: Record<string, string> = {}): PassThrough & IncomingMessage {
  return Object.assign(new PassThrough(), { headers }) as unknown as PassThrough & IncomingMessage;
}

const settled = async (promise: Promise<unknown>): Promise<boolean> => {
  let done = false;
  void promise.then(
    () => (done = true),
    () => (done = true),
  );
  await new Promise((resolve) => setImmediate(resolve));
  return done;
};

describe('readNodeRequest (the one Node body reader)', () => {
  it('resolves the whole body, the same Buffer when it came in one chunk', async () => {
    const request = fakeRequest();
    const chunk = Buffer.from('{"batch":[]}');
    const read = readNodeRequest(request, { limit: 100, excess: 'stop' });
    request.end(chunk);
    const result = await read;
    expect(result.ok && result.body).to.equal(chunk);
    const split = fakeRequest();
    const joined = readNodeRequest(split, { limit: 100, excess: 10_000 });
    split.write('ab');
    split.end('cd');
    expect(await joined).to.deep.equal({ ok: true, body: Buffer.from('abcd') });
  });

  it("'stop': a declared length over the limit is refused unread", async () => {
    const request = fakeRequest({ 'content-length': '101' });
    expect(await readNodeRequest(request, { limit: 100, excess: 'stop' })).to.deep.equal({ ok: false, size: 101 });
    expect(request.readableFlowing).to.equal(null);
  });

  it("'stop': a streamed body settles as soon as it passes the limit, and reading stops", async () => {
    const request = fakeRequest();
    const read = readNodeRequest(request, { limit: 10, excess: 'stop' });
    request.write(Buffer.alloc(11));
    expect(await read).to.deep.equal({ ok: false, size: 11 });
    expect(request.isPaused()).to.equal(true);
  });

  it('draining: an oversized body is read to its end before the read settles, so the client can read the answer', async () => {
    const request = fakeRequest({ 'content-length': '30' });
    const read = readNodeRequest(request, { limit: 10, excess: 1000 });
    request.write(Buffer.alloc(20));
    expect(await settled(read)).to.equal(false);
    request.end(Buffer.alloc(10));
    expect(await read).to.deep.equal({ ok: false, size: 30 });
  });

  it('draining is bounded: past the bound, or with a larger declared length, it settles at once', async () => {
    const streamed = fakeRequest();
    const read = readNodeRequest(streamed, { limit: 10, excess: 100 });
    streamed.write(Buffer.alloc(60));
    streamed.write(Buffer.alloc(60));
    expect(await read).to.deep.equal({ ok: false, size: 120 });
    expect(streamed.isPaused()).to.equal(true);
    expect(await readNodeRequest(fakeRequest({ 'content-length': '101' }), { limit: 10, excess: 100 })).to.deep.equal({ ok: false, size: 101 });
  });

  it('rejects when the client goes away before the end of the body', async () => {
    const request = fakeRequest();
    const read = readNodeRequest(request, { limit: 100, excess: 'stop' });
    request.write('ab');
    request.destroy();
    await read.then(
      () => expect.fail('resolved'),
      (error: unknown) => expect(error).to.be.instanceOf(Error),
    );
  });
});

describe('readNodeBody (receiver adapters)', () => {
  it('keeps its documented errors: PayloadTooLargeError unread, NetworkError ERR_BODY_READ when the sender goes away', async () => {
    const big = fakeRequest({ 'content-length': '2048' });
    await readNodeBody(big, 1024).then(
      () => expect.fail('resolved'),
      (error: unknown) => expect(error).to.be.instanceOf(PayloadTooLargeError).and.include({ size: 2048, limit: 1024 }),
    );
    const gone = fakeRequest();
    const read = readNodeBody(gone, 1024);
    gone.destroy();
    await read.then(
      () => expect.fail('resolved'),
      (error: unknown) => expect(error).to.be.instanceOf(NetworkError).and.include({ code: 'ERR_BODY_READ' }),
    );
  });
});
