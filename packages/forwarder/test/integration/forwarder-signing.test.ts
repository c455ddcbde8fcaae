import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { IncomingHttpHeaders, Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { expect } from 'chai';
import { Webhook } from 'standardwebhooks';
import { createWebhookHandler } from '../../../eventrelay/src/webhooks/adapters/node';
import { verifySignature } from '../../../eventrelay/src/webhooks/schemes/signature';
import type { WebhookMessage } from '../../../eventrelay/src/webhooks/message-types';
import { basic, post, waitFor, requireBuiltCli } from './helpers';
import { close, listen } from '../../../eventrelay/test/integration/webhooks/http-helpers';

const CLI = resolve('packages/forwarder/dist/cli.js');
const WHSEC = `whsec_${randomBytes(32).toString('base64')}`;
const WRITE_KEY = 'signing-test-key';

interface Recorded {
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer;
}

describe('a real forwarder process signing with "both", delivering to receivers that check each scheme', function () {
  this.timeout(40_000);
  let dir: string;
  let child: ChildProcess | undefined;
  const servers: Server[] = [];

  before(() => {
    requireBuiltCli();
    dir = mkdtempSync(join(tmpdir(), 'eventrelay-signing-'));
  });

  after(async () => {
    if (child && child.exitCode === null) child.kill('SIGKILL');
    await Promise.all(servers.map((server) => close(server)));
    rmSync(dir, { recursive: true, force: true });
  });

  it('the Standard Webhooks adapter accepts every delivery, and each request also passes X-Signature and the standardwebhooks package', async () => {
    // URL 1: eventrelay's Node adapter requiring Standard Webhooks; it fails "retry-me" once, so the forwarder retries.
    const handled: { message: WebhookMessage; id: string | undefined }[] = [];
    const adapter = createServer(
      createWebhookHandler({
        secret: WHSEC,
        scheme: 'standard-webhooks',
        handler: (message, { request }) => {
          handled.push({ message, id: request.headers['webhook-id'] as string | undefined });
          const id = message.type === 'delete' ? undefined : message.messageId;
          if (id === 'retry-me' && handled.filter((h) => h.id === 'retry-me').length === 1) throw new Error('fail once');
        },
      }),
    );
    // URL 2: records the raw requests (answers 503, so only URL 1 decides delivery) for the independent checks.
    const recorded: Recorded[] = [];
    const recorder = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        recorded.push({ headers: req.headers, body: Buffer.concat(chunks) });
        res.writeHead(503).end();
      });
    });
    servers.push(adapter, recorder);
    const adapterPort = await listen(adapter);
    const recorderPort = await listen(recorder);

    const configPath = join(dir, 'eventrelay.config.json');
    writeFileSync(
      configPath,
      JSON.stringify({
        // Delivered bodies kept, so that a delivered message can be replayed.
        storage: { type: 'memory', keepDelivered: 60_000 },
        adminToken: 'admin-token-for-the-test',
        delivery: { minRetryDelay: 50, maxRetryDelay: 100 },
        sources: [
          {
            name: 'web',
            writeKey: { env: 'WEB_KEY' },
            destinations: {
              Webhooks: {
                signing: 'both',
                sharedSecret: { env: 'HOOK_SECRET' },
                webhooks: [{ url: `http://127.0.0.1:${adapterPort}/hook` }, { url: `http://127.0.0.1:${recorderPort}/raw` }],
              },
            },
          },
        ],
      }),
    );
    child = spawn(process.execPath, [CLI, 'serve', '--port', '0', '--config', configPath], {
      env: { PATH: process.env.PATH ?? '', WEB_KEY: WRITE_KEY, HOOK_SECRET: WHSEC },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr!.on('data', (c: Buffer) => (out += c.toString()));
    await waitFor(() => /listening on (http:\/\/\S+)/.test(out), 'the forwarder to listen', 15_000);
    const url = /listening on (http:\/\/\S+)/.exec(out)![1]!;

    const batch = [
      { type: 'track', userId: 'u1', event: 'Signed Up', messageId: 'first-1' },
      { type: 'identify', userId: 'u2', traits: { plan: 'pro' }, messageId: 'retry-me' },
    ];
    expect((await post(`${url}/v1/batch`, { batch }, { Authorization: basic(WRITE_KEY) })).status).to.equal(200);
    await waitFor(() => recorded.length >= 3 && handled.length >= 3, 'three attempts at both URLs', 20_000);

    // A deletion notice has no messageId: its webhook-id is its delivery's own id.
    const deletion = await post(`${url}/admin/deletions`, { userId: 'u1' }, { Authorization: 'Bearer admin-token-for-the-test' });
    expect(deletion.status).to.equal(202);
    await waitFor(() => handled.some((h) => h.message.type === 'delete'), 'the delete notice', 20_000);
    const notice = handled.find((h) => h.message.type === 'delete')!;
    expect(notice.id).to.match(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    await waitFor(() => recorded.length >= 4, 'the delete notice at the recorder', 20_000);

    // The adapter saw first-1 once and retry-me twice (it threw the first time), each verified.
    expect(handled.filter((h) => h.message.type !== 'delete').map((h) => h.id).sort()).to.deep.equal(['first-1', 'retry-me', 'retry-me']);
    for (const h of handled) if (h.message.type !== 'delete') expect(h.message.messageId).to.equal(h.id);

    // Each request, checked by the standardwebhooks package and by X-Signature.
    const verifier = new Webhook(WHSEC);
    for (const { headers, body } of recorded) {
      const parsed = verifier.verify(body.toString('utf8'), headers as Record<string, string>) as { type: string; messageId?: string };
      if (parsed.type !== 'delete') expect(parsed.messageId).to.equal(headers['webhook-id']);
      expect(verifySignature(body, headers['x-signature'], WHSEC)).to.equal(true);
    }
    // The retry: the same bytes and webhook-id, a timestamp of its own attempt.
    const retries = recorded.filter((r) => r.headers['webhook-id'] === 'retry-me');
    expect(retries).to.have.length(2);
    expect(retries[1]!.body.equals(retries[0]!.body)).to.equal(true);
    expect(retries[1]!.headers['x-signature']).to.equal(retries[0]!.headers['x-signature']);
    expect(Number(retries[1]!.headers['webhook-timestamp'])).to.be.at.least(Number(retries[0]!.headers['webhook-timestamp']));

    // An operator's replay is a resend of the same webhook: the same webhook-id (Standard Webhooks
    // asks for that), so a receiver that deduplicates by it drops a copy it already handled.
    const admin = { Authorization: 'Bearer admin-token-for-the-test' };
    const listed = (await (await fetch(`${url}/admin/messages?messageId=first-1`, { headers: admin })).json()) as { items: { id: number }[] };
    expect((await post(`${url}/admin/deliveries/${listed.items[0]!.id}/replay`, {}, admin)).status).to.equal(202);
    await waitFor(() => handled.filter((h) => h.id === 'first-1').length === 2, 'the replay at the adapter', 20_000);
    await waitFor(() => recorded.filter((r) => r.headers['webhook-id'] === 'first-1').length >= 2, 'the replay at the recorder', 20_000);
    const [sent, replayed] = recorded.filter((r) => r.headers['webhook-id'] === 'first-1');
    expect(replayed!.body.equals(sent!.body)).to.equal(true);
    expect(verifier.verify(replayed!.body.toString('utf8'), replayed!.headers as Record<string, string>)).to.deep.include({ messageId: 'first-1' });
    expect(out).not.to.include(WHSEC);
  });
});
