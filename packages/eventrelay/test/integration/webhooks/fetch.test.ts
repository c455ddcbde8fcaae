import { expect } from 'chai';
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import { InvalidArgumentError, PayloadTooLargeError, TimeoutError } from '../../../src/errors';
import { createFetchHandler, handleWebhookRequest } from '../../../src/webhooks/adapters/fetch';
import type { FetchWebhookOptions } from '../../../src/webhooks/adapters/fetch';
import type { WebhookMessage } from '../../../src/webhooks/message-types';
import { body, hmacHex, SECRET, signatureOf } from '../../fixtures/webhooks/load';
import { close, listen, send } from './http-helpers';
import { trickle } from './trickle';

function post(raw: string | Uint8Array | ReadableStream<Uint8Array> | null, headers: Record<string, string> = {}): Request {
  return new Request('http://127.0.0.1/api/webhooks', { method: 'POST', body: raw, headers, duplex: 'half' } as RequestInit);
}

describe('createFetchHandler (Fetch Request → Response)', () => {
  let received: WebhookMessage[];
  let errors: [unknown, number][];

  function handler(options: Partial<FetchWebhookOptions> = {}): (request: Request) => Promise<Response> {
    received = [];
    errors = [];
    return createFetchHandler({
      secret: SECRET,
      handler: (message) => void received.push(message),
      onError: (error, status) => void errors.push([error, status]),
      ...options,
    });
  }

  it('answers 204 to a signed request and passes the Request to the handler', async () => {
    let seenRequest: Request | undefined;
    const handle = handler({
      handler: (message, context) => {
        received.push(message);
        seenRequest = context.request;
      },
    });
    const request = post(body('identify-escapes.json'), { 'X-Signature': signatureOf('identify-escapes.json') });
    const response = await handle(request);
    expect(response.status).to.equal(204);
    expect(received[0]).to.include({ type: 'identify', userId: 'café-7' });
    expect(seenRequest).to.equal(request);
  });

  it('answers 401, 400 and 405 like the other adapters', async () => {
    const handle = handler();
    expect((await handle(post(body('alias.json')))).status).to.equal(401);
    const wrongCase = await handle(post(body('alias.json'), { 'x-signature': signatureOf('alias.json').slice(0, 39) }));
    expect(wrongCase.status).to.equal(401);
    const invalid = '{"version":1,"type":"screen","userId":"u","timestamp":"2026-01-01T00:00:00.000Z","name":"Home"}';
    const bad = await handle(post(invalid, { 'x-signature': hmacHex(invalid) }));
    expect(bad.status).to.equal(400);
    expect(((await bad.json()) as { error: string }).error).to.include('`context`');
    const get = await handle(new Request('http://127.0.0.1/api/webhooks'));
    expect(get.status).to.equal(405);
  });

  it('reads a streamed body and answers 413 once it passes maxBodySize, cancelling the stream', async () => {
    const handle = handler({ maxBodySize: 100 });
    let cancelled = false;
    let pulls = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        pulls++;
        controller.enqueue(new Uint8Array(60).fill(0x20));
      },
      cancel() {
        cancelled = true;
      },
    });
    const response = await handle(post(stream, { 'x-signature': '0'.repeat(40) }));
    expect(response.status).to.equal(413);
    expect(cancelled).to.equal(true);
    expect(pulls).to.be.below(10);
    expect(errors[0]![0]).to.be.instanceOf(PayloadTooLargeError);
    const declared = await handle(post('x'.repeat(500), { 'x-signature': hmacHex('x'.repeat(500)) }));
    expect(declared.status).to.equal(413);
  });

  it('puts a streamed body back together from its chunks', async () => {
    const handle = handler();
    const raw = body('page-emoji-u2028.json');
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < raw.length; i += 5) controller.enqueue(new Uint8Array(raw.subarray(i, i + 5)));
        controller.close();
      },
    });
    const response = await handle(post(stream, { 'x-signature': signatureOf('page-emoji-u2028.json') }));
    expect(response.status).to.equal(204);
  });

  it('answers 500 and reports an InvalidArgumentError when the body was read already', async () => {
    const handle = handler();
    const request = post(body('delete.json'), { 'x-signature': signatureOf('delete.json') });
    await request.json();
    const response = await handle(request);
    expect(response.status).to.equal(500);
    expect(errors[0]![0]).to.be.instanceOf(InvalidArgumentError);
    expect((errors[0]![0] as Error).message).to.include('already read');
  });

  it('handleWebhookRequest handles one request with the given options', async () => {
    received = [];
    const response = await handleWebhookRequest(post(body('delete.json'), { 'x-signature': signatureOf('delete.json') }), {
      secret: ['old', SECRET],
      handler: (message) => void received.push(message),
    });
    expect(response.status).to.equal(204);
    expect(received).to.have.length(1);
  });

  describe('behind a real server on 127.0.0.1 (Node request bridged to a Fetch Request)', () => {
    let server: Server | undefined;

    async function start(handle: (request: Request) => Promise<Response>): Promise<number> {
      server = createServer((req: IncomingMessage, res: ServerResponse) => {
        const request = new Request(`http://127.0.0.1${req.url}`, {
          method: req.method,
          headers: req.headers as Record<string, string>,
          body: req.method === 'POST' ? (Readable.toWeb(req) as ReadableStream) : null,
          duplex: 'half',
        } as RequestInit);
        void handle(request).then(async (response) => {
          res.writeHead(response.status, Object.fromEntries(response.headers));
          res.end(Buffer.from(await response.arrayBuffer()));
        });
      });
      return listen(server);
    }

    afterEach(async () => {
      if (server) await close(server);
      server = undefined;
    });

    it('answers 204 signed, 401 unsigned, 413 for a chunked body over the limit', async () => {
      const port = await start(handler({ maxBodySize: 1000 }));
      const raw = body('track-whitespace.json');
      expect((await send(port, { body: raw, headers: { 'x-signature': signatureOf('track-whitespace.json') } })).status).to.equal(204);
      expect((await send(port, { body: raw })).status).to.equal(401);
      const big = Buffer.alloc(800, 'a');
      expect((await send(port, { chunks: [big, big], headers: { 'x-signature': hmacHex(Buffer.concat([big, big])) } })).status).to.equal(413);
    });

    it('answers 503 at `timeout` while the body is still trickling in, and never calls the handler', async () => {
      const port = await start(handler({ timeout: 200 }));
      const reply = await trickle(port, { body: body('track-compact.json'), headers: { 'x-signature': signatureOf('track-compact.json') } });
      expect(reply.status).to.equal(503);
      expect(received).to.have.length(0);
      expect(errors.map(([e, s]) => [e instanceof TimeoutError, s])).to.deep.equal([[true, 503]]);
    });
  });
});
