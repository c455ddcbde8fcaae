import { after, afterEach, before, describe, it } from 'mocha';
import { expect } from 'chai';
import type { ChildProcess } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { basic, closerOf, killAll, post, serveInChild, waitFor } from './helpers';
import type { ChildForwarder } from './helpers';
import { usePostgres } from '../../../../test/helpers/postgres';

const KEY = 'batched-kill-key';
const SECRET = 'batched-kill-secret';
const MAX_EVENTS = 50;
/** The receiver's answer time: batches are in flight when the victim dies. */
const ANSWER_MS = 150;

/** A receiver of batches: every call of every 2xx'd array body, counted; and the bodies, to check their bytes. */
async function startBatchReceiver() {
  const arrivals = new Map<string, number>();
  const bodies: string[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      setTimeout(() => {
        const calls = JSON.parse(body) as { messageId: string }[];
        bodies.push(body);
        for (const c of calls) arrivals.set(c.messageId, (arrivals.get(c.messageId) ?? 0) + 1);
        res.writeHead(200).end('ok');
      }, ANSWER_MS);
    });
  });
  const close = closerOf(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, arrivals, bodies, close };
}

async function serve(name: string, databaseUrl: string, receiverUrl: string): Promise<ChildForwarder> {
  const config = {
    // A short lease: what the victim held (calls in its open batch, batches in flight) is claimed again soon.
    storage: { type: 'postgres', url: databaseUrl, poolSize: 4, lease: 12_000 },
    delivery: { concurrency: 4 },
    sources: [{ name: 'web', writeKey: KEY, destinations: { Webhooks: { sharedSecret: SECRET, webhooks: [{ url: `${receiverUrl}/batch`, batch: { maxEvents: MAX_EVENTS, maxWaitMs: 200 } }] } } }],
  };
  return serveInChild(name, config);
}

describe('batched delivery on PostgreSQL: one of two instances killed with SIGKILL mid-batch', function () {
  this.timeout(120_000);
  const db = usePostgres();
  const children: ChildProcess[] = [];
  let receiver: Awaited<ReturnType<typeof startBatchReceiver>>;

  before(async () => {
    receiver = await startBatchReceiver();
  });
  afterEach(() => {
    killAll(children);
  });
  after(async () => {
    await receiver?.close();
  });

  it('the other delivers every acknowledged call, in batches of at most maxEvents; a call arrives twice only from a batch the victim had sent', async () => {
    const [victim, survivor] = await Promise.all([serve('a', db.url, receiver.url), serve('b', db.url, receiver.url)]);
    children.push(victim.child, survivor.child);
    const sent: string[] = [];
    // 1,500 calls, to both instances in turn, 50 a request.
    for (let b = 0; b < 30; b++) {
      const batch = Array.from({ length: 50 }, (_, i) => ({ type: 'track', userId: `u${i}`, event: 'Killed', messageId: `kill-${b}-${i}` }));
      // To both in turn while the victim lives, then to the survivor.
      const to = b % 2 === 0 && b <= 14 ? victim : survivor;
      const response = await post(`${to.url}/v1/batch`, { batch }, { Authorization: basic(KEY) });
      expect(response.status).to.equal(200);
      sent.push(...batch.map((m) => m.messageId));
      // Killed once batches are at the receiver: some in flight, some open, some stored and not sent.
      if (b === 14) {
        await waitFor(() => receiver.bodies.length >= 2, 'the first batches at the receiver', 30_000);
        victim.child.kill('SIGKILL');
        expect((await victim.exited).signal).to.equal('SIGKILL');
      }
    }
    await waitFor(() => sent.every((id) => receiver.arrivals.has(id)), 'every acknowledged call at the receiver', 90_000);
    expect(sent.filter((id) => !receiver.arrivals.has(id))).to.deep.equal([]);
    for (const body of receiver.bodies) expect((JSON.parse(body) as unknown[]).length).to.be.within(1, MAX_EVENTS);
    // At least once: a call arrives twice only when the victim's batch holding it was sent and its
    // outcome not written: at most its requests in flight and the outcomes it was writing, each
    // at most delivery.concurrency (4) full batches.
    const twice = [...receiver.arrivals.entries()].filter(([, n]) => n > 1).map(([id]) => id);
    expect(twice.length, `arrived twice: ${twice.length}`).to.be.at.most(2 * 4 * MAX_EVENTS);
    // And it came again in the very same bytes: a stored batch is resent as it is, never rebuilt.
    for (const id of twice) {
      const holding = new Set(receiver.bodies.filter((body) => body.includes(`"messageId":"${id}"`)));
      expect(holding.size, `the bodies holding ${id}`).to.equal(1);
    }
    await waitFor(async () => ((await (await fetch(`${survivor.url}/stats`)).json()) as { queueDepth: number }).queueDepth === 0, 'an empty queue', 30_000);
    survivor.child.kill('SIGTERM');
    expect((await survivor.exited).code).to.equal(0);
  });
});
