import { describe, it, before, after, afterEach } from 'mocha';
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { adminAs, basic, CLI, killAll, listeningUrl, post, requireBuiltCli, runCli, useReceiver, waitFor } from './helpers';
import { usePostgres } from '../../../../test/helpers/postgres';

const TOKEN = 'processes-admin-token';
/** What the forwarder promises: every instance applies a change within 2 s. */
const APPLIED_WITHIN = 2000;

interface Instance {
  child: ChildProcess;
  url: string;
  output: () => string;
  exited: Promise<number | null>;
}

async function serve(configPath: string, env: Record<string, string>, children: ChildProcess[]): Promise<Instance> {
  const child = spawn(process.execPath, [CLI, 'serve', '--config', configPath, '--port', '0'], { env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let out = '';
  child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (out += c.toString()));
  const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));
  const url = await listeningUrl(exited, () => out, 20_000);
  return { child, url, output: () => out, exited };
}

const admin = adminAs(TOKEN);

describe('runtime setup with two `eventrelay serve` processes on one PostgreSQL database', function () {
  this.timeout(90_000);
  const db = usePostgres();
  const children: ChildProcess[] = [];
  let dir: string;
  const receiver = useReceiver();
  let configPath: string;
  let a: Instance | undefined;
  let b: Instance | undefined;

  before(async () => {
    requireBuiltCli();
    dir = mkdtempSync(join(tmpdir(), 'eventrelay-sources-cluster-'));
    configPath = join(dir, 'eventrelay.config.json');
    writeFileSync(
      configPath,
      JSON.stringify({
        adminToken: { env: 'ADMIN_TOKEN' },
        storage: { type: 'postgres', url: { env: 'DATABASE_URL' }, poolSize: 3, lease: 3000 },
        delivery: { timeout: 2000, minRetryDelay: 20, maxRetryDelay: 100 },
      }),
    );
  });

  after(async () => {
    killAll(children);
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  afterEach(async () => {
    const started = [a, b];
    a = undefined;
    b = undefined;
    killAll(children, 'SIGTERM');
    for (const i of started) if (i !== undefined) expect(await i.exited).to.equal(0);
    // Each test starts from an empty store (the tables are missing when no instance started).
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    try {
      await client.query('TRUNCATE messages, deliveries, audiences, audience_members, counters, sources, source_keys, log_messages, log_attempts').catch(() => {});
    } finally {
      await client.end();
    }
  });

  /** Both instances; a child that started is stopped after the test even when the other did not start. */
  async function startBoth(): Promise<[Instance, Instance]> {
    const env = { DATABASE_URL: db.url, ADMIN_TOKEN: TOKEN };
    const starting = [serve(configPath, env, children), serve(configPath, env, children)];
    const both = (await Promise.all(starting)) as [Instance, Instance];
    [a, b] = both;
    return both;
  }

  const send = (url: string, key: string, messageId: string) =>
    post(`${url}/v1/batch`, { batch: [{ type: 'track', userId: 'u', event: 'Cluster', messageId }] }, { Authorization: basic(key) });
  const unique = (prefix: string) => `${prefix}-${Date.now()}-${Math.random().toString(36).slice(2)}`;
  const arrivedAt = (path: string) => new Set(receiver.delivered.filter((r) => r.path === path).map((r) => r.json.messageId as string));

  it('a source created through one instance accepts calls on the other within 2 s', async () => {
    const [a, b] = await startBoth();
    const created = await admin(a.url, 'POST', '/admin/sources', { name: 'web' });
    expect(created.status).to.equal(201);
    const key = created.json.writeKey as string;
    await waitFor(async () => (await send(b.url, key, unique('first'))).status === 200, 'the other instance to accept the key', APPLIED_WITHIN);
    const listed = await admin(b.url, 'GET', '/admin/sources');
    expect(listed.json.sources.map((s: { name: string }) => s.name)).to.deep.equal(['web']);
    for (const i of [a, b]) expect(i.output()).not.to.contain(key);
  });

  it('switching the destination off on one stops deliveries on both; switching it on delivers what waited', async () => {
    const [a, b] = await startBoth();
    const key = (await admin(a.url, 'POST', '/admin/sources', { name: 'web' })).json.writeKey as string;
    const put = await admin(a.url, 'PUT', '/admin/sources/web/destinations/Webhooks', { webhooks: [{ url: `${receiver.url}/cluster` }] });
    expect(put.status).to.equal(200);
    // Both deliver once both applied the setting. B may learn the new source (and its key) before
    // the PUT: a call it takes then is logged filtered, and the next one is tried.
    const probes = [unique('on-a')];
    await waitFor(async () => {
      const id = unique('on-b');
      if ((await send(b.url, key, id)).status !== 200) return false;
      let status: string | undefined;
      await waitFor(async () => (status = (await admin(b.url, 'GET', `/admin/messages?messageId=${id}`)).json.items[0]?.status) !== undefined, 'the log line');
      if (status === 'filtered') return false;
      probes.push(id);
      return true;
    }, 'B to apply the setting', APPLIED_WITHIN);
    expect((await send(a.url, key, probes[0]!)).status).to.equal(200);
    await waitFor(() => probes.every((id) => arrivedAt('/cluster').has(id)), 'the deliveries while on');

    // Queued while the receiver is down, on both instances.
    receiver.failFirst('/cluster', 1_000_000);
    const waiting = [unique('wait-a'), unique('wait-b')];
    expect((await send(a.url, key, waiting[0]!)).status).to.equal(200);
    expect((await send(b.url, key, waiting[1]!)).status).to.equal(200);
    await waitFor(() => waiting.every((id) => receiver.requests.some((r) => r.path === '/cluster' && r.json.messageId === id)), 'attempts of both');

    const off = await admin(a.url, 'PATCH', '/admin/sources/web/destinations/Webhooks', { enabled: false });
    expect(off.status).to.equal(200);
    // B stops too: a call made on B once it applied the switch is logged filtered, not queued.
    // (Calls B took before it applied the switch were routed: they wait with the others.)
    let filteredOnB: string | undefined;
    await waitFor(async () => {
      const id = unique('off-b');
      await send(b.url, key, id);
      // The log line is written within 50 ms: wait for it, then see how the call was taken.
      let status: string | undefined;
      await waitFor(async () => (status = (await admin(b.url, 'GET', `/admin/messages?messageId=${id}`)).json.items[0]?.status) !== undefined, 'the log line');
      if (status !== 'filtered') {
        waiting.push(id);
        return false;
      }
      filteredOnB = id;
      return true;
    }, 'B to stop routing', APPLIED_WITHIN + 2000);
    // No attempt of the waiting deliveries once both applied the switch and finished what was in flight.
    await waitFor(async () => {
      const stats = await Promise.all([a, b].map(async (i) => (await fetch(`${i.url}/stats`)).json() as Promise<{ inFlight: number }>));
      return stats.every((s) => s.inFlight === 0);
    }, 'attempts in flight to finish');
    const attemptsBefore = receiver.requests.filter((r) => r.path === '/cluster').length;
    receiver.failFirst('/cluster', 0);
    // Rounds of both delivery loops go by: a second source keeps both delivering.
    const probeKey = (await admin(a.url, 'POST', '/admin/sources', { name: 'probe' })).json.writeKey as string;
    await admin(a.url, 'PUT', '/admin/sources/probe/destinations/Webhooks', { webhooks: [{ url: `${receiver.url}/probe` }] });
    for (const target of [a, b, a, b]) {
      const id = unique('probe');
      await waitFor(async () => (await send(target.url, probeKey, id)).status === 200, 'the probe key');
      await waitFor(() => arrivedAt('/probe').has(id), 'a probe delivery');
    }
    expect(receiver.requests.filter((r) => r.path === '/cluster')).to.have.length(attemptsBefore);
    const stats = (await (await fetch(`${a.url}/stats`)).json()) as { failed: number; queueDepth: number };
    expect(stats.failed).to.equal(0);
    await waitFor(async () => ((await (await fetch(`${a.url}/stats`)).json()) as { queueDepth: number }).queueDepth === waiting.length, 'the waiting deliveries in the queue');

    const on = await admin(b.url, 'PATCH', '/admin/sources/web/destinations/Webhooks', { enabled: true });
    expect(on.status).to.equal(200);
    await waitFor(() => waiting.every((id) => arrivedAt('/cluster').has(id)), 'what waited to be delivered', 15_000);
    expect(arrivedAt('/cluster').has(filteredOnB!)).to.equal(false);
  });

  it('a key rotated on one instance is refused on both once its grace ends', async () => {
    const [a, b] = await startBoth();
    const first = (await admin(a.url, 'POST', '/admin/sources', { name: 'web' })).json.writeKey as string;
    await waitFor(async () => (await send(b.url, first, unique('k'))).status === 200, 'B to know the key', APPLIED_WITHIN);
    const rotated = await admin(a.url, 'POST', '/admin/sources/web/write-keys', { graceSeconds: 1 });
    expect(rotated.status).to.equal(201);
    const next = rotated.json.writeKey as string;
    await waitFor(async () => (await send(b.url, next, unique('n'))).status === 200, 'B to know the new key', APPLIED_WITHIN);
    const end = Date.parse(rotated.json.previousKeysExpireAt);
    for (const i of [a, b]) {
      await waitFor(async () => (await send(i.url, first, unique('old'))).status === 401, 'the old key to be refused', 10_000);
      // Refused only after the grace, never before it.
      expect(Date.now()).to.be.at.least(end);
      expect((await send(i.url, next, unique('new'))).status).to.equal(200);
    }
  });

  it('`eventrelay apply` reconciles a file with the running store (dry run first), and both instances serve the result', async () => {
    const [a, b] = await startBoth();
    await admin(a.url, 'POST', '/admin/sources', { name: 'api-made' });
    const file = join(dir, 'apply.json');
    writeFileSync(
      file,
      JSON.stringify({
        storage: { type: 'postgres', url: { env: 'DATABASE_URL' } },
        sources: [{ name: 'ios', writeKey: { env: 'IOS_KEY' }, destinations: { Webhooks: { sharedSecret: { env: 'IOS_SECRET' }, webhooks: [{ url: `${receiver.url}/ios` }] } } }],
      }),
    );
    const env = { DATABASE_URL: db.url, IOS_KEY: 'ios-file-key-0042', IOS_SECRET: 'ios-file-secret-0042' };
    const dry = await runCli(['apply', '--config', file, '--dry-run'], env);
    expect(dry.code, dry.stderr).to.equal(0);
    expect(dry.stdout).to.contain(`+ ios: Webhooks added (on, 1 URL, signed); write key …0042 from the file`);
    expect(dry.stdout).to.contain('  api-made: in the store only (not in the file): left as it is');
    expect(dry.stdout).to.contain('dry run: nothing written (1 source would change)');
    expect(dry.stdout + dry.stderr).not.to.contain('ios-file-secret-0042').and.not.contain('ios-file-key-0042');
    const password = new URL(db.url).password;
    if (password !== '') expect(dry.stdout + dry.stderr).not.to.contain(password);
    expect((await send(a.url, 'ios-file-key-0042', unique('dry'))).status).to.equal(401);

    const applied = await runCli(['apply', '--config', file], env);
    expect(applied.code, applied.stderr).to.equal(0);
    expect(applied.stdout).to.contain('applied: 1 source changed');
    for (const i of [a, b]) await waitFor(async () => (await send(i.url, 'ios-file-key-0042', unique('ios'))).status === 200, 'the applied source', APPLIED_WITHIN);
    await waitFor(() => arrivedAt('/ios').size >= 2, 'deliveries of the applied source');
    const again = await runCli(['apply', '--config', file], env);
    expect(again.stdout).to.contain('= ios: unchanged').and.contain('nothing to change');
  });
});
