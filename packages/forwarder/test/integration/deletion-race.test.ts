import { describe, it, afterEach } from 'mocha';
import { expect } from 'chai';
import { createServer, request as httpRequest } from 'node:http';
import type { Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createForwarder } from '../../src/service';
import type { Forwarder } from '../../src/service';
import type { LoggedMessage } from '../../src/store/contract';
import { startSink } from '../../../../test/helpers/sink';
import type { Sink } from '../../../../test/helpers/sink';
import { useTempDirs } from '../../../../test/helpers/temp-dir';
import { basic, freshStorage, waitFor } from './helpers';
import type { StoreKind } from './helpers';

/**
 * Deleting a source while its calls arrive (issue: nothing stranded): on every store, and with
 * two instances on PostgreSQL. A call the ingestion API acknowledged is delivered by the source
 * it was sent to, or failed with the deletion's reason; never left pending, never sent to a
 * source made again under the name; and the delivery log says what the queue says.
 */

const TOKEN = 'admin-token';
const REASON = 'The source was deleted before this delivery was made';
type Kind = StoreKind;

interface Instance {
  readonly forwarder: Forwarder;
  readonly url: string;
  /** Resolves when this instance's handler has taken a request marked `X-Test-Slow` (its key is checked then). */
  slowRequest(): Promise<void>;
}

interface Cluster {
  readonly instances: readonly Instance[];
  close(): Promise<void>;
}

/** A forwarder on a node:http server of the test's own, so that it can tell when a request came in. */
async function serve(forwarder: Forwarder): Promise<{ instance: Instance; server: Server }> {
  await forwarder.start();
  const waiting: (() => void)[] = [];
  const server = createServer((req, res) => {
    // The handler checks the write key before it reads the body, in this same turn.
    forwarder.handler(req, res);
    if (req.headers['x-test-slow'] !== undefined) for (const done of waiting.splice(0)) done();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { server, instance: { forwarder, url, slowRequest: () => new Promise((resolve) => waiting.push(resolve)) } };
}

async function call(url: string, method: string, body?: unknown): Promise<{ status: number; json: any }> {
  const response = await fetch(url, {
    method,
    headers: { Authorization: `Bearer ${TOKEN}`, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, json: text === '' ? undefined : JSON.parse(text) };
}

function batch(ids: readonly string[]): string {
  return JSON.stringify({ batch: ids.map((messageId) => ({ type: 'track', userId: `u-${messageId}`, event: 'E', messageId })) });
}

async function send(url: string, key: string, ids: readonly string[]): Promise<{ status: number; code: string | undefined }> {
  const response = await fetch(`${url}/v1/batch`, { method: 'POST', headers: { Authorization: basic(key), 'Content-Type': 'application/json' }, body: batch(ids) });
  const json = (await response.json()) as { error?: { code?: string } };
  return { status: response.status, code: json.error?.code };
}

/** Every line of `source` in the log, through the operations layer (no paging). */
async function lines(forwarder: Forwarder, source: string): Promise<LoggedMessage[]> {
  const ops = (forwarder as unknown as { parts: { lifecycle: { ops: { messages(q: object): Promise<LoggedMessage[]> } } } }).parts.lifecycle.ops;
  return ops.messages({ source, limit: 1_000_000 });
}

/**
 * A receiver: `/old` holds every request until `release()` (attempts in flight at the deletion),
 * then answers 200 at once; other paths answer 200. Records the messageIds answered 200, by path.
 */
function holdingReceiver() {
  const held: { res: ServerResponse; path: string; id: string }[] = [];
  const answered = new Map<string, string[]>();
  let holding = true;
  const answer = (res: ServerResponse, path: string, id: string) => {
    if (!answered.has(path)) answered.set(path, []);
    answered.get(path)!.push(id);
    res.writeHead(200).end('ok');
  };
  return {
    held,
    answered: (path: string) => answered.get(path) ?? [],
    handle(path: string, id: string, res: ServerResponse) {
      if (path === '/old' && holding) held.push({ res, path, id });
      else answer(res, path, id);
    },
    release() {
      holding = false;
      for (const h of held.splice(0)) answer(h.res, h.path, h.id);
    },
  };
}

describe('deleting a source while its calls arrive', function () {
  this.timeout(90_000);
  const tempDir = useTempDirs('eventrelay-deletion-race-');
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => {});
  });

  const storage = (kind: Kind, skip: () => never) => freshStorage(kind, tempDir, cleanups, skip);

  /** One instance on memory and SQLite; two on one PostgreSQL database. */
  async function cluster(kind: Kind, skip: () => never): Promise<Cluster> {
    const delivery = { minRetryDelay: 20, maxRetryDelay: 50, concurrency: 4, timeout: 25_000 };
    const config = { adminToken: TOKEN, storage: await storage(kind, skip), delivery };
    const count = kind === 'postgres' ? 2 : 1;
    const instances: Instance[] = [];
    const servers: Server[] = [];
    for (let i = 0; i < count; i++) {
      const { instance, server } = await serve(createForwarder(config as never));
      instances.push(instance);
      servers.push(server);
    }
    const result = {
      instances,
      async close() {
        for (const s of servers) s.closeAllConnections();
        await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
        await Promise.all(instances.map((i) => i.forwarder.close()));
      },
    };
    cleanups.push(() => result.close());
    return result;
  }

  async function receiver() {
    const state = holdingReceiver();
    const sink: Sink = await startSink((request, res) => {
      const id = (JSON.parse(request.body) as { messageId: string }).messageId;
      state.handle(request.path, id, res);
    });
    cleanups.push(async () => {
      state.release();
      await sink.close();
    });
    return { ...state, url: sink.url };
  }

  for (const kind of ['memory', 'sqlite', 'postgres'] as const) {
    it(`${kind}: clients back to back, a slow upload and attempts in flight: nothing stranded, nothing for the new source, the log agrees`, async function () {
      const { instances } = await cluster(kind, () => this.skip());
      const [a, b = a] = instances as [Instance, Instance?];
      const hooks = await receiver();
      const created = await call(`${a!.url}/admin/sources`, 'POST', { name: 'race' });
      expect(created.status, JSON.stringify(created.json)).to.equal(201);
      const oldKey = created.json.writeKey as string;
      expect((await call(`${a!.url}/admin/sources/race/destinations/Webhooks`, 'PUT', { webhooks: [{ url: `${hooks.url}/old` }] })).status).to.equal(200);
      await waitFor(async () => (await b!.forwarder.listSources()).some((s) => s.name === 'race' && s.destinations.Webhooks !== null), 'every instance to serve the source');

      // Clients sending back to back, through every instance.
      const acknowledged = new Set<string>();
      const refused = new Set<string>();
      const afterDeletion: number[] = [];
      let deleted = false;
      let next = 0;
      const client = async (instance: Instance, n: number) => {
        for (;;) {
          const ids = Array.from({ length: 10 }, () => `c${n}-${next++}`);
          const answer = await send(instance.url, oldKey, ids);
          for (const id of ids) (answer.status === 200 ? acknowledged : refused).add(id);
          if (answer.status !== 200) expect(answer.status).to.equal(401);
          if (deleted) afterDeletion.push(answer.status);
          // Once the deletion is done and this client was refused, it stops.
          if (deleted && answer.status === 401) return;
        }
      };
      const clients = [client(a!, 0), client(b!, 1), client(a!, 2), client(b!, 3)];

      // Some calls acknowledged, some attempts held by the receiver (in flight).
      await waitFor(() => acknowledged.size >= 200 && hooks.held.length >= 4, 'calls acknowledged and attempts in flight');

      // A slow upload: its key is checked, then the source is deleted, then its body arrives.
      const slowIds = Array.from({ length: 10 }, (_, i) => `slow-${i}`);
      const body = batch(slowIds);
      const arrived = a!.slowRequest();
      const slow = httpRequest(`${a!.url}/v1/batch`, {
        method: 'POST',
        headers: { Authorization: basic(oldKey), 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body), 'X-Test-Slow': '1' },
      });
      const slowAnswer = new Promise<{ status: number; json: any }>((resolve, reject) => {
        slow.on('response', (res) => {
          let text = '';
          res.on('data', (chunk) => (text += chunk));
          res.on('end', () => resolve({ status: res.statusCode!, json: JSON.parse(text) }));
        });
        slow.on('error', reject);
      });
      slow.write(body.slice(0, 20));
      await arrived;

      // Deleted through the other instance, while the clients send and the receiver holds attempts.
      const removed = await call(`${b!.url}/admin/sources/race`, 'DELETE');
      expect(removed.status, JSON.stringify(removed.json)).to.equal(200);
      deleted = true;
      // Made again under the name, with another URL, at once.
      const again = await call(`${b!.url}/admin/sources`, 'POST', { name: 'race' });
      expect(again.status).to.equal(201);
      expect((await call(`${b!.url}/admin/sources/race/destinations/Webhooks`, 'PUT', { webhooks: [{ url: `${hooks.url}/new` }] })).status).to.equal(200);

      slow.end(body.slice(20));
      const slowResult = await slowAnswer;
      expect(slowResult.status).to.equal(401);
      expect(slowResult.json.error.code).to.equal('source_deleted');
      for (const id of slowIds) refused.add(id);
      await Promise.all(clients);

      // The attempts held at the deletion now succeed.
      hooks.release();
      // The new source's own calls go to its URL.
      await waitFor(async () => (await a!.forwarder.listSources()).some((s) => s.name === 'race' && s.destinations.Webhooks?.webhooks[0]?.url.endsWith('/new')), 'every instance to serve the new source');
      expect((await send(a!.url, again.json.writeKey as string, ['n-1', 'n-2'])).status).to.equal(200);
      await waitFor(() => hooks.answered('/new').length >= 2, 'the new source\'s calls');

      // Quiet: nothing queued, nothing in flight, on any instance.
      for (const instance of instances) {
        await waitFor(async () => {
          const stats = await instance.forwarder.stats();
          return stats.queueDepth === 0 && stats.inFlight === 0;
        }, 'the queue to empty', 30_000);
      }
      expect(acknowledged.size).to.be.above(0);

      // Nothing of the old source reached the new one's URL.
      expect(hooks.answered('/new').sort()).to.deep.equal(['n-1', 'n-2']);
      // The old URL got only acknowledged calls, none of the slow upload's.
      const oldDelivered = new Set(hooks.answered('/old'));
      for (const id of oldDelivered) expect(acknowledged.has(id), id).to.equal(true);

      // Every acknowledged call is delivered or failed for the deletion, in the log of every
      // instance; what was delivered is what the receiver answered 200 to. (On PostgreSQL an
      // instance's log lines reach the others' view within a flush or two.)
      for (const instance of instances) {
        await waitFor(async () => {
          const old = (await lines(instance.forwarder, 'race')).filter((l) => !l.messageId.startsWith('n-'));
          return (
            old.length === acknowledged.size &&
            old.every((l) => l.state === 'delivered' || l.state === 'failed') &&
            old.filter((l) => l.state === 'delivered').length === oldDelivered.size
          );
        }, 'the log to finish every acknowledged call', 20_000);
        const old = (await lines(instance.forwarder, 'race')).filter((l) => !l.messageId.startsWith('n-'));
        const byId = new Map(old.map((l) => [l.messageId, l]));
        expect(byId.size).to.equal(acknowledged.size);
        for (const id of acknowledged) {
          const line = byId.get(id);
          expect(line, id).not.to.equal(undefined);
          if (oldDelivered.has(id)) expect(line!.state, id).to.equal('delivered');
          else expect([line!.state, line!.reason], id).to.deep.equal(['failed', REASON]);
        }
        for (const id of refused) expect(byId.has(id), id).to.equal(false);
        // The log's counts are the queue's.
        const stats = await instance.forwarder.stats();
        const all = await lines(instance.forwarder, 'race');
        expect(stats.delivered, 'delivered').to.equal(all.filter((l) => l.state === 'delivered').length);
        expect(stats.failed, 'failed').to.equal(all.filter((l) => l.state === 'failed').length);
      }
      // The in-flight attempts were recorded delivered, not failed: a recover sends nothing again.
      expect(oldDelivered.size).to.be.at.least(4);
      const recovered = await call(`${a!.url}/admin/recover`, 'POST', { source: 'race', since: 0 });
      expect(recovered.status, JSON.stringify(recovered.json)).to.equal(202);
      expect(recovered.json.queued).to.equal(0);
    });
  }
});
