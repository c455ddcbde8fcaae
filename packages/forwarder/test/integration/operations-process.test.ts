import { describe, it, before, after } from 'mocha';
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { basic, killAll, post, requireBuiltCli, useReceiver, waitFor } from './helpers';

const CLI = resolve('packages/forwarder/dist/cli.js');
const ADMIN = 'process-admin-token';
const auth = { Authorization: `Bearer ${ADMIN}` };

interface Running {
  readonly child: ChildProcess;
  readonly url: string;
  readonly stdout: () => string;
  readonly exited: Promise<number | null>;
}

/** `eventrelay serve` from the built package, once it printed its addresses. */
async function serve(configPath: string, dataDir: string): Promise<Running> {
  const child = spawn(process.execPath, [CLI, 'serve', '--port', '0', '--config', configPath, '--data', dataDir], {
    env: { PATH: process.env.PATH ?? '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (err += c.toString()));
  const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));
  let gone = false;
  void exited.then(() => (gone = true));
  await waitFor(() => gone || /"metrics":/.test(out), 'the forwarder to print its addresses', 15_000);
  const url = /listening on (http:\/\/\S+)/.exec(out)?.[1];
  if (url === undefined) throw new Error(`the forwarder did not start:\n${out}\n${err}`);
  return { child, url, stdout: () => out, exited };
}

async function getJson(url: string): Promise<any> {
  const response = await fetch(url, { headers: auth });
  expect(response.status, url).to.equal(200);
  return response.json();
}

describe('operating `eventrelay serve` (child processes, SQLite store)', function () {
  this.timeout(60_000);
  const receiver = useReceiver();
  let dir: string;
  const children: ChildProcess[] = [];

  before(async () => {
    requireBuiltCli();
    dir = mkdtempSync(join(tmpdir(), 'eventrelay-ops-cli-'));
  });

  after(async () => {
    killAll(children);
    rmSync(dir, { recursive: true, force: true });
  });

  it('prints the debugger and metrics addresses, keeps the delivery log across a restart, and replays from it', async () => {
    const configPath = join(dir, 'eventrelay.config.json');
    writeFileSync(
      configPath,
      JSON.stringify({
        adminToken: ADMIN,
        delivery: { minRetryDelay: 10, maxRetryDelay: 40, retryWindow: 100 },
        sources: [{ name: 'web', writeKey: 'process-key', destinations: { Webhooks: { webhooks: [{ url: `${receiver.url}/proc` }] } } }],
      }),
    );
    const dataDir = join(dir, 'data');
    receiver.failFirst('/proc', 1000, 502);
    const first = await serve(configPath, dataDir);
    children.push(first.child);
    // The start line (JSON, stdout a pipe) names them.
    const started = JSON.parse(first.stdout().split('\n')[0]!) as Record<string, string>;
    expect(started).to.include({ event: 'started', debugger: `${first.url}/debugger`, metrics: `${first.url}/metrics` });

    const page = await fetch(`${first.url}/debugger`);
    expect(page.status).to.equal(200);
    expect(page.headers.get('content-security-policy')).to.match(/^default-src 'self'/);
    expect(await page.text()).to.contain('<script type="module" src="/debugger/app.js"></script>');

    await post(`${first.url}/v1/track`, { userId: 'proc-user', event: 'Across Restart', messageId: 'across-restart' }, { Authorization: basic('process-key') });
    let row: any;
    await waitFor(async () => {
      row = (await getJson(`${first.url}/admin/messages?messageId=across-restart`)).items[0];
      return row?.status === 'failed';
    }, 'the delivery to fail');
    const metrics = await (await fetch(`${first.url}/metrics`)).text();
    expect(metrics).to.match(/^eventrelay_accepted_total\{source="web"\} 1$/m);
    expect(metrics).to.match(/^eventrelay_failed_total\{source="web"\} 1$/m);
    expect(metrics).to.match(/^eventrelay_attempts_total\{source="web",outcome="failed"\} 1$/m);

    first.child.kill('SIGTERM');
    expect(await first.exited).to.equal(0);

    receiver.failFirst('/proc', 0);
    const second = await serve(configPath, dataDir);
    children.push(second.child);
    // The store's totals survive the restart; the metrics count what this process saw.
    expect((await getJson(`${second.url}/stats`)).accepted).to.equal(1);
    expect(await (await fetch(`${second.url}/metrics`)).text()).not.to.match(/^eventrelay_accepted_total\{source="web"\} [1-9]/m);
    const kept = await getJson(`${second.url}/admin/deliveries/${row.id}`);
    expect(kept).to.include({ status: 'failed', messageId: 'across-restart', attempts: row.attempts });
    expect(kept.attemptLog).to.have.length(row.attempts);
    expect(JSON.parse(kept.body)).to.include({ event: 'Across Restart' });

    const replay = await fetch(`${second.url}/admin/deliveries/${row.id}/replay`, { method: 'POST', headers: auth });
    expect(replay.status).to.equal(202);
    await waitFor(() => receiver.delivered.some((r) => r.json.messageId === 'across-restart'), 'the replayed delivery');
    await waitFor(async () => (await getJson(`${second.url}/admin/deliveries/${row.id}`)).status === 'delivered', 'the log to show it delivered');
    second.child.kill('SIGTERM');
    expect(await second.exited).to.equal(0);
  });
});
