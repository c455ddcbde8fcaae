import { describe, it, before, after, afterEach } from 'mocha';
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import pg from 'pg';
import { basic, killAll, listeningUrl, post, requireBuiltCli, startReceiver, waitFor } from './helpers';
import type { Receiver } from './helpers';
import { truncate, usePostgres } from '../../../../test/helpers/postgres';

const CLI = resolve('packages/forwarder/dist/cli.js');
const KEY = 'cluster-write-key';

interface Instance {
  child: ChildProcess;
  url: string;
  output: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** `eventrelay serve` on the built package, on the test database. */
async function serve(configPath: string, databaseUrl: string): Promise<Instance> {
  const child = spawn(process.execPath, [CLI, 'serve', '--config', configPath, '--port', '0'], {
    env: { PATH: process.env.PATH ?? '', DATABASE_URL: databaseUrl },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (out += c.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) => child.once('exit', (code, signal) => done({ code, signal })));
  const url = await listeningUrl(exited, () => out, 20_000);
  return { child, url, output: () => out, exited };
}

function batchOf(prefix: string, b: number, size: number) {
  return Array.from({ length: size }, (_, i) => ({ type: 'track', userId: `u${i}`, event: 'Cluster Test', messageId: `${prefix}-${b}-${i}` }));
}

describe('several `eventrelay serve` processes on one PostgreSQL database', function () {
  this.timeout(90_000);
  const db = usePostgres();
  const children: ChildProcess[] = [];
  let dir: string;
  let receiver: Receiver;

  before(async () => {
    requireBuiltCli();
    dir = mkdtempSync(join(tmpdir(), 'eventrelay-cluster-'));
    // A receiver that takes its time, so that attempts are in flight when an instance dies.
    receiver = await startReceiver(150);
  });

  afterEach(async () => {
    killAll(children);
    // Each test starts from an empty queue.
    await truncate(db.url, ['messages', 'deliveries', 'audiences', 'audience_members', 'counters']);
  });

  after(async () => {
    await receiver?.close();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  function config(path: string): string {
    const configPath = join(dir, `${path.slice(1)}.json`);
    writeFileSync(
      configPath,
      JSON.stringify({
        storage: { type: 'postgres', url: { env: 'DATABASE_URL' }, poolSize: 4, lease: 3000 },
        // A 1 s timeout under a 3 s lease: an attempt and its outcome fit in the lease with room for a slow machine.
        delivery: { concurrency: 8, timeout: 1000, minRetryDelay: 50, maxRetryDelay: 200 },
        sources: [{ name: 'web', writeKey: KEY, destinations: { Webhooks: { sharedSecret: 's', webhooks: [{ url: `${receiver.url}${path}` }] } } }],
      }),
    );
    return configPath;
  }

  const arrivals = (path: string) => {
    const counts = new Map<string, number>();
    for (const r of receiver.delivered) if (r.path === path) counts.set(r.json.messageId as string, (counts.get(r.json.messageId as string) ?? 0) + 1);
    return counts;
  };

  it('two instances share the load: every message once, no duplicate, the same /stats', async () => {
    const configPath = config('/two');
    const instances = await Promise.all([serve(configPath, db.url), serve(configPath, db.url)]);
    children.push(...instances.map((i) => i.child));
    // The start line (JSON: stdout is a pipe) names the store, its password hidden.
    expect(instances[0]!.output()).to.match(/"store":"postgres at postgres:\/\//).and.not.contain('postgres://postgres:');

    const sent: string[] = [];
    // A load balancer's round robin: batch b goes to instance b % 2, 30 batches of 10.
    await Promise.all(
      Array.from({ length: 30 }, async (_, b) => {
        const batch = batchOf('two', b, 10);
        const response = await post(`${instances[b % 2]!.url}/v1/batch`, { batch }, { Authorization: basic(KEY) });
        expect(response.status).to.equal(200);
        sent.push(...batch.map((m) => m.messageId));
      }),
    );
    // A client resending a batch to the other instance: recognised as a duplicate there.
    const again = await post(`${instances[1]!.url}/v1/batch`, { batch: batchOf('two', 0, 10) }, { Authorization: basic(KEY) });
    expect(again.status).to.equal(200);

    await waitFor(() => arrivals('/two').size === sent.length, 'every message at the receiver', 30_000);
    const counts = arrivals('/two');
    expect([...counts.keys()].sort()).to.deep.equal([...sent].sort());
    expect([...counts.values()].filter((n) => n > 1)).to.deep.equal([]);

    await waitFor(async () => ((await (await fetch(`${instances[0]!.url}/stats`)).json()) as { delivered: number }).delivered === 300, '/stats to count them');
    const stats = await Promise.all(instances.map(async (i) => (await fetch(`${i.url}/stats`)).json()));
    for (const s of stats) expect(s).to.include({ accepted: 310, duplicates: 10, delivered: 300, queueDepth: 0, failed: 0 });

    // The delivery log shows each message delivered with its one attempt, whichever instance
    // accepted it and whichever delivered it.
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    try {
      const lines = async () =>
        (
          await client.query<{ state: string; attempts: number; rows: number }>(
            // Attempts logged: entries of the line's attempt_log (a chunk per write: its series, then its entries).
            `SELECT l.state, l.attempts, coalesce((SELECT sum(json_array_length(c -> 1))::int FROM json_array_elements(('[' || l.attempt_log || ']')::json) c), 0) AS rows
             FROM log_messages l WHERE l.message_id LIKE 'two-%' AND l.state <> 'duplicate'`,
          )
        ).rows;
      // A line waits in its instance's buffer for its first attempt (up to 5 s when the other
      // instance made it): wait for all of them, each delivered.
      const open = async () => {
        const now = await lines();
        return now.length === 300 ? now.filter((l) => l.state !== 'delivered') : [...now.filter((l) => l.state !== 'delivered'), { written: now.length }];
      };
      await waitFor(async () => (await open()).length === 0, 'every log line written and delivered', 20_000).catch(async (error: Error) => {
        throw new Error(`${error.message}; lines not written or not delivered: ${JSON.stringify(await open())}`);
      });
      const all = await lines();
      expect(all).to.have.length(300);
      expect(all.filter((l) => l.attempts !== 1 || l.rows !== 1)).to.deep.equal([]);
    } finally {
      await client.end();
    }

    for (const i of instances) i.child.kill('SIGTERM');
    for (const i of instances) expect((await i.exited).code).to.equal(0);
  });

  it('three instances, one killed with SIGKILL mid-load: the others deliver everything it acknowledged', async () => {
    const configPath = config('/kill');
    const instances = await Promise.all([serve(configPath, db.url), serve(configPath, db.url), serve(configPath, db.url)]);
    children.push(...instances.map((i) => i.child));
    const victim = instances[0]!;

    const acknowledged: string[] = [];
    const ackedByVictim: string[] = [];
    let killed = false;
    for (let b = 0; b < 30; b++) {
      if (b === 15) {
        // It holds leases now: attempts in flight to the slow receiver.
        const client = new pg.Client({ connectionString: db.url });
        await client.connect();
        const held = await client.query('SELECT count(*)::int AS n FROM deliveries WHERE status = 0 AND lease_owner LIKE $1', [`%:${victim.child.pid}:%`]);
        await client.end();
        expect(held.rows[0].n).to.be.above(0);
        victim.child.kill('SIGKILL');
        killed = true;
        expect((await victim.exited).signal).to.equal('SIGKILL');
      }
      const target = killed && b % 3 === 0 ? instances[1 + (b % 2)]! : instances[b % 3]!;
      const batch = batchOf('kill', b, 10);
      const response = await post(`${target.url}/v1/batch`, { batch }, { Authorization: basic(KEY) });
      expect(response.status).to.equal(200);
      acknowledged.push(...batch.map((m) => m.messageId));
      if (target === victim) ackedByVictim.push(...batch.map((m) => m.messageId));
    }
    expect(ackedByVictim.length).to.be.above(0);

    // The victim's claimed deliveries come back once their lease (3 s) runs out.
    await waitFor(() => acknowledged.every((id) => arrivals('/kill').has(id)), 'every acknowledged message at the receiver', 40_000);
    const counts = arrivals('/kill');
    expect([...counts.keys()].filter((id) => !acknowledged.includes(id))).to.deep.equal([]);
    // At least once: only what the victim had sent and not recorded may arrive twice, which its
    // slots bound to twice `delivery.concurrency` (8 requests in flight, 8 outcomes being written).
    const twice = [...counts.entries()].filter(([, n]) => n > 1).map(([id]) => id);
    expect(twice.length, `arrived twice: ${twice.join(', ')}`).to.be.at.most(16);

    await waitFor(async () => ((await (await fetch(`${instances[1]!.url}/stats`)).json()) as { queueDepth: number }).queueDepth === 0, 'an empty queue');
    for (const i of instances.slice(1)) i.child.kill('SIGTERM');
    for (const i of instances.slice(1)) expect((await i.exited).code).to.equal(0);
  });
});
