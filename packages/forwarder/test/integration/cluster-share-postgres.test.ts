import { describe, it, before, after, afterEach } from 'mocha';
import { expect } from 'chai';
import type { ChildProcess } from 'node:child_process';
import { readFileSync, readdirSync, readlinkSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { basic, closerOf, killAll, post, serveInChild, waitFor } from './helpers';
import { truncate, usePostgres } from '../../../../test/helpers/postgres';

const KEY = 'share-write-key';
const CONCURRENCY = 4;
/** The receiver's answer time: slow enough that one instance alone cannot keep up with the backlog. */
const ANSWER_MS = 40;

/** Per instance, what the receiver saw. */
interface Seen {
  delivered: number;
  inFlight: number;
  mostInFlight: number;
}

/** The inode of the IPv4 socket on 127.0.0.1 from local port `from` to port `to` (/proc/net/tcp). */
function socketInode(from: number, to: number): string | undefined {
  const hex = (port: number) => `0100007F:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  for (const line of readFileSync('/proc/net/tcp', 'utf8').split('\n').slice(1)) {
    const fields = line.trim().split(/\s+/);
    if (fields[1] === hex(from) && fields[2] === hex(to)) return fields[9];
  }
  return undefined;
}

/** Which of `pids` holds the socket with `inode` open (its /proc/<pid>/fd). */
function ownerOf(inode: string, pids: ReadonlyMap<number, string>): string | undefined {
  for (const [pid, name] of pids) {
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      try {
        if (readlinkSync(`/proc/${pid}/fd/${fd}`) === `socket:[${inode}]`) return name;
      } catch {
        // closed meanwhile
      }
    }
  }
  return undefined;
}

/**
 * A webhook receiver that answers 200 after `ANSWER_MS` and counts, per instance, the requests
 * in flight: from a request's arrival until its answer is written. The instance is the process
 * that owns the connection's other end (found in /proc when it connects), not anything the
 * forwarder sends: all instances share the source's settings, headers included.
 */
async function startCountingReceiver() {
  const seen = new Map<string, Seen>();
  const arrivals = new Map<string, number>();
  /** Per messageId that arrived more than once, who sent it each time and when. */
  const repeats = new Map<string, string[]>();
  const firsts = new Map<string, string>();
  /** The forwarders' processes: pid to name. */
  const pids = new Map<number, string>();
  const owners = new WeakMap<Socket, string>();
  let port = 0;
  const server = http.createServer((req, res) => {
    let instance = owners.get(req.socket);
    if (instance === undefined) {
      // Looked up once per connection, at its first request: both ends are set up by then.
      const inode = socketInode(req.socket.remotePort!, port);
      instance = (inode === undefined ? undefined : ownerOf(inode, pids)) ?? 'unknown';
      owners.set(req.socket, instance);
    }
    let s = seen.get(instance);
    if (s === undefined) seen.set(instance, (s = { delivered: 0, inFlight: 0, mostInFlight: 0 }));
    const counts = s;
    counts.inFlight++;
    counts.mostInFlight = Math.max(counts.mostInFlight, counts.inFlight);
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const messageId = (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { messageId: string }).messageId;
      setTimeout(() => {
        counts.inFlight--;
        counts.delivered++;
        arrivals.set(messageId, (arrivals.get(messageId) ?? 0) + 1);
        const seenAs = `${instance} at ${new Date().toISOString()}`;
        if (!firsts.has(messageId)) firsts.set(messageId, seenAs);
        else repeats.set(messageId, [...(repeats.get(messageId) ?? [firsts.get(messageId)!]), seenAs]);
        res.writeHead(200).end('ok');
      }, ANSWER_MS);
    });
  });
  const close = closerOf(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    arrivals,
    repeats,
    pids,
    reset() {
      seen.clear();
      arrivals.clear();
      repeats.clear();
      firsts.clear();
      pids.clear();
    },
    close,
  };
}

interface Instance {
  readonly name: string;
  readonly child: ChildProcess;
  readonly url: string;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** A forwarder in its own process (from source), known to the receiver as `name`. */
async function serve(name: string, databaseUrl: string, receiver: { url: string; pids: Map<number, string> }, storage: object = {}): Promise<Instance> {
  const config = {
    storage: { type: 'postgres', url: databaseUrl, poolSize: 4, ...storage },
    // The default timeout (10 s): an attempt that outlasts it on a loaded machine is sent again, and
    // the receiver would count a duplicate that says nothing about sharing.
    delivery: { concurrency: CONCURRENCY },
    sources: [{ name: 'web', writeKey: KEY, destinations: { Webhooks: { webhooks: [{ url: `${receiver.url}/hook` }] } } }],
  };
  return { name, ...(await serveInChild(name, config, (child) => receiver.pids.set(child.pid!, name))) };
}

const BATCH = 50;

function batchOf(prefix: string, b: number) {
  return Array.from({ length: BATCH }, (_, i) => ({ type: 'track', userId: `u${i}`, event: 'Shared', messageId: `${prefix}-${b}-${i}` }));
}

/** `count` messages in batches of 50, in turn to each of `targets`, a few requests at a time; resolves with their ids once all are acknowledged. */
async function sendBacklog(prefix: string, count: number, targets: readonly Instance[]): Promise<string[]> {
  const ids: string[] = [];
  const batches = count / BATCH;
  let next = 0;
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      while (next < batches) {
        const b = next++;
        const batch = batchOf(prefix, b);
        const response = await post(`${targets[b % targets.length]!.url}/v1/batch`, { batch }, { Authorization: basic(KEY) });
        expect(response.status, JSON.stringify(response.json)).to.equal(200);
        ids.push(...batch.map((m) => m.messageId));
      }
    }),
  );
  return ids;
}

describe('forwarders on one PostgreSQL database share a backlog', function () {
  this.timeout(120_000);
  const db = usePostgres();
  const children: ChildProcess[] = [];
  let receiver: Awaited<ReturnType<typeof startCountingReceiver>>;

  before(async () => {
    receiver = await startCountingReceiver();
  });

  afterEach(async () => {
    killAll(children);
    receiver.reset();
    await truncate(db.url, ['messages', 'deliveries', 'counters']);
  });

  after(async () => {
    await receiver?.close();
  });

  async function start(names: readonly string[], storage: object = {}): Promise<Instance[]> {
    const instances = await Promise.all(names.map((name) => serve(name, db.url, receiver, storage)));
    children.push(...instances.map((i) => i.child));
    return instances;
  }

  const describeSeen = () => JSON.stringify(Object.fromEntries(receiver.seen));

  async function stop(instances: readonly Instance[]): Promise<void> {
    for (const i of instances) i.child.kill('SIGTERM');
    for (const i of instances) expect((await i.exited).code).to.equal(0);
  }

  for (const names of [['a', 'b'], ['a', 'b', 'c']]) {
    const least = names.length === 2 ? 0.3 : 0.2;
    it(`${names.length} instances: each delivers at least ${least * 100}% of 2,000 messages, with at most delivery.concurrency requests in flight`, async () => {
      const instances = await start(names);
      const sent = await sendBacklog(`share${names.length}`, 2000, instances);

      await waitFor(() => receiver.arrivals.size === sent.length, 'every message at the receiver', 90_000);
      expect(sent.filter((id) => !receiver.arrivals.has(id))).to.deep.equal([]);
      expect(Object.fromEntries(receiver.repeats), 'duplicates').to.deep.equal({});
      for (const name of names) {
        const s = receiver.seen.get(name);
        expect(s, `what ${name} delivered: ${describeSeen()}`).not.to.equal(undefined);
        expect(s!.delivered, `${name}'s share: ${describeSeen()}`).to.be.at.least(least * sent.length);
        expect(s!.mostInFlight, `${name}'s requests in flight: ${describeSeen()}`).to.be.at.most(CONCURRENCY);
      }
      expect([...receiver.seen.keys()].sort()).to.deep.equal([...names].sort());
      await stop(instances);
    });
  }

  it('a backlog acknowledged by one instance only is delivered by both, the other too with at most delivery.concurrency requests in flight', async () => {
    const instances = await start(['a', 'b']);
    // The load balancer sends everything to a; b finds the backlog in the store.
    const sent = await sendBacklog('skew', 2000, [instances[0]!]);
    await waitFor(() => receiver.arrivals.size === sent.length, 'every message at the receiver', 90_000);
    expect(Object.fromEntries(receiver.repeats), 'duplicates').to.deep.equal({});
    // b idles until its next look at the store (the idle wait, 5 s) before it joins in.
    expect(receiver.seen.get('b')?.delivered ?? 0, describeSeen()).to.be.at.least(0.2 * sent.length);
    for (const name of ['a', 'b']) expect(receiver.seen.get(name)!.mostInFlight, describeSeen()).to.be.at.most(CONCURRENCY);
    await stop(instances);
  });

  it('one of two instances killed with SIGKILL while both deliver a backlog: the other delivers everything acknowledged', async () => {
    // A short lease: what the victim had claimed is claimed again soon after it dies.
    const instances = await start(['a', 'b'], { lease: 12_000 });
    const [victim, survivor] = instances as [Instance, Instance];
    const sent = await sendBacklog('kill', 2000, instances);
    await waitFor(() => (receiver.seen.get('a')?.delivered ?? 0) >= 100, 'the victim to deliver some', 30_000);
    victim.child.kill('SIGKILL');
    expect((await victim.exited).signal).to.equal('SIGKILL');

    await waitFor(() => sent.every((id) => receiver.arrivals.has(id)), 'every acknowledged message at the receiver', 90_000);
    expect(sent.filter((id) => !receiver.arrivals.has(id))).to.deep.equal([]);
    // At least once: only what the victim had sent and not recorded may arrive twice, within its
    // requests in flight and the outcomes it was writing.
    const twice = [...receiver.arrivals.entries()].filter(([, n]) => n > 1).map(([id]) => id);
    expect(twice.length, `arrived twice: ${twice.join(', ')}`).to.be.at.most(2 * CONCURRENCY);
    expect(receiver.seen.get('b')!.mostInFlight).to.be.at.most(CONCURRENCY);
    await waitFor(async () => ((await (await fetch(`${survivor.url}/stats`)).json()) as { queueDepth: number }).queueDepth === 0, 'an empty queue');
    await stop([survivor]);
  });
});
