import { describe, it, before, after, afterEach } from 'mocha';
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { basic, CLI, killAll, listeningUrl, post, requireBuiltCli, runCli, startReceiver, useReceiver, waitFor } from './helpers';

interface Running {
  child: ChildProcess;
  url: string;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Spawns `eventrelay serve` on the built package and waits for its "listening on" line. */
async function serve(args: string[], env: Record<string, string> = {}): Promise<Running> {
  const child = spawn(process.execPath, [CLI, 'serve', '--port', '0', ...args], {
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (err += c.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) => child.once('exit', (code, signal) => done({ code, signal })));
  const url = await listeningUrl(exited, () => out, 15_000, 'the forwarder', () => `${out}\n${err}`);
  return { child, url, stdout: () => out, stderr: () => err, exited };
}

describe('eventrelay CLI (child processes on the built package)', () => {
  const dirs: string[] = [];
  const children: ChildProcess[] = [];
  const receiver = useReceiver();

  before(async function () {
    requireBuiltCli();
  });

  afterEach(() => {
    killAll(children);
  });

  after(async () => {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  function workspace(config: object): { dir: string; configPath: string; dataDir: string } {
    const dir = mkdtempSync(join(tmpdir(), 'eventrelay-cli-'));
    dirs.push(dir);
    const configPath = join(dir, 'eventrelay.config.json');
    writeFileSync(configPath, JSON.stringify(config, null, 2));
    return { dir, configPath, dataDir: join(dir, 'data') };
  }

  it('loses nothing it acknowledged when killed with SIGKILL and restarted', async function () {
    this.timeout(60_000);
    const { configPath, dataDir } = workspace({
      delivery: { minRetryDelay: 50, maxRetryDelay: 200 },
      sources: [{ name: 'web', writeKey: { env: 'WEB_KEY' }, destinations: { Webhooks: { sharedSecret: 's', webhooks: [{ url: `${receiver.url}/crash` }] } } }],
    });
    const env = { WEB_KEY: 'crash-test-key' };
    // Mid-run: the receiver takes the first 40 messages, then answers 503 until after the restart.
    receiver.failFirst('/crash', 0);
    const first = await serve(['--config', configPath, '--data', dataDir], env);
    children.push(first.child);

    const acknowledged: string[] = [];
    const batches = Array.from({ length: 20 }, (_, b) =>
      Array.from({ length: 15 }, (_, i) => ({ type: 'track', userId: `u${i}`, event: 'Crash Test', messageId: `crash-${b}-${i}` })),
    );
    let sent = 0;
    for (const batch of batches) {
      if (sent === 45) receiver.failFirst('/crash', 1_000_000);
      const response = await post(`${first.url}/v1/batch`, { batch }, { Authorization: basic('crash-test-key') });
      expect(response.status).to.equal(200);
      acknowledged.push(...batch.map((m) => m.messageId));
      sent += batch.length;
    }
    first.child.kill('SIGKILL');
    const died = await first.exited;
    expect(died.signal).to.equal('SIGKILL');
    const deliveredBeforeKill = new Set(receiver.delivered.filter((r) => r.path === '/crash').map((r) => r.json.messageId as string));
    // Some were delivered before the kill, most were still queued: the restart must finish them.
    expect(deliveredBeforeKill.size).to.be.above(0).and.below(acknowledged.length);

    receiver.failFirst('/crash', 0);
    const second = await serve(['--config', configPath, '--data', dataDir], env);
    children.push(second.child);
    const arrived = () => new Set(receiver.delivered.filter((r) => r.path === '/crash').map((r) => r.json.messageId as string));
    await waitFor(() => acknowledged.every((id) => arrived().has(id)), 'every acknowledged message at the receiver', 40_000);
    expect([...arrived()].filter((id) => !acknowledged.includes(id))).to.deep.equal([]);

    second.child.kill('SIGTERM');
    expect((await second.exited).code).to.equal(0);
  });

  it('shuts down gracefully on SIGTERM, finishing the attempt in flight', async function () {
    this.timeout(30_000);
    const slow = await startReceiver(400);
    try {
      const { configPath, dataDir } = workspace({
        sources: [{ name: 'web', writeKey: 'term-key', destinations: { Webhooks: { webhooks: [{ url: `${slow.url}/slow` }] } } }],
      });
      const running = await serve(['--config', configPath, '--data', dataDir]);
      children.push(running.child);
      await post(`${running.url}/v1/track`, { userId: 'u', event: 'Slow' }, { Authorization: basic('term-key') });
      await waitFor(() => slow.requests.length === 1, 'the attempt to start');
      running.child.kill('SIGTERM');
      const exit = await running.exited;
      expect(exit.code).to.equal(0);
      expect(slow.delivered).to.have.length(1);
      expect(running.stdout()).to.match(/SIGTERM, finishing attempts in flight/).and.match(/stopped/);
      // Not a terminal: no live status line.
      expect(running.stdout()).not.to.contain('\r');

      // The outcome was written before exit: a restart does not send it again.
      const again = await serve(['--config', configPath, '--data', dataDir]);
      children.push(again.child);
      const stats = await (await fetch(`${again.url}/stats`)).json();
      expect(stats).to.include({ delivered: 1, queueDepth: 0 });
      again.child.kill('SIGTERM');
      await again.exited;
      expect(slow.requests).to.have.length(1);
    } finally {
      await slow.close();
    }
  });

  it('logs with DEBUG=eventrelay* without write keys, secrets, tokens or bodies', async function () {
    this.timeout(30_000);
    const { configPath, dataDir } = workspace({
      adminToken: 'debug-admin-token-value',
      delivery: { minRetryDelay: 20, maxRetryDelay: 50 },
      sources: [
        {
          name: 'web',
          writeKey: 'debug-write-key-value',
          destinations: { Webhooks: { sharedSecret: 'debug-shared-secret-value', webhooks: [{ url: `${receiver.url}/debug?token=debug-url-token-value`, headers: { Authorization: 'Bearer debug-header-value' } }] } },
        },
      ],
    });
    receiver.failFirst('/debug?token=debug-url-token-value', 1);
    const running = await serve(['--config', configPath, '--data', dataDir], { DEBUG: 'eventrelay*' });
    children.push(running.child);
    await post(`${running.url}/v1/track`, { userId: 'debug-user-value', event: 'Debug Event Value' }, { Authorization: basic('debug-write-key-value') });
    await post(`${running.url}/v1/track`, { userId: 'x' }, { Authorization: basic('debug-write-key-value') });
    await post(`${running.url}/v1/track`, { userId: 'x', event: 'y' }, { Authorization: basic('wrong-key-value') });
    await post(`${running.url}/admin/deletions`, { userId: 'debug-user-value' }, { Authorization: 'Bearer debug-admin-token-value' });
    await waitFor(() => receiver.delivered.filter((r) => r.path.startsWith('/debug')).length === 2, 'both webhooks');
    running.child.kill('SIGTERM');
    await running.exited;
    const logs = running.stderr() + running.stdout();
    expect(logs).to.match(/eventrelay:forwarder/);
    for (const secret of ['debug-write-key-value', 'wrong-key-value', 'debug-shared-secret-value', 'debug-admin-token-value', 'debug-url-token-value', 'debug-header-value', 'debug-user-value', 'Debug Event Value']) {
      expect(logs, secret).not.to.contain(secret);
    }
  });

  it('refuses a config with an error, naming the field, without printing secrets', async () => {
    const { configPath } = workspace({
      sources: [
        { name: 'web', writeKey: 'super-secret-write-key', destinations: { Webhooks: { webhooks: [{ url: 'https://ok.example/x' }] } } },
        { name: 'ios', writeKey: 'other-secret', destinations: { Webhooks: { sharedSecret: 'hush-hush', webhooks: [{ url: 'mailto:someone' }] } } },
      ],
    });
    const result = await runCli(['serve', '--config', configPath]);
    expect(result.code).to.equal(1);
    expect(result.stderr).to.contain('sources[1].destinations.Webhooks.webhooks[0].url');
    expect(result.stderr).to.match(/http or https/);
    for (const secret of ['super-secret-write-key', 'other-secret', 'hush-hush']) expect(result.stderr + result.stdout).not.to.contain(secret);
  });

  it('names a missing environment variable, and `check` accepts a good config', async () => {
    const { configPath } = workspace({ sources: [{ name: 'web', writeKey: { env: 'EVENTRELAY_TEST_KEY' } }] });
    const missing = await runCli(['check', '--config', configPath]);
    expect(missing.code).to.equal(1);
    expect(missing.stderr).to.contain('EVENTRELAY_TEST_KEY').and.contain('sources[0].writeKey');
    const ok = await runCli(['check', '--config', configPath], { EVENTRELAY_TEST_KEY: 'value-not-printed' });
    expect(ok.code).to.equal(0);
    expect(ok.stdout).to.match(/OK \(1 sources: web\)/);
    expect(ok.stdout).not.to.contain('value-not-printed');
  });

  it('`check` refuses exactly what `serve` refuses: reserved, repeated and non-ASCII static headers, a Host header', async () => {
    const bad: Record<string, string>[] = [
      { 'Content-Type': 'text/plain' },
      { 'X-Signature': 'forged' },
      { 'X-Token': 'a', 'x-token': 'b' },
      { 'X-Name': 'caf\u00e9' },
      { Host: 'other.example' },
    ];
    for (const headers of bad) {
      const { configPath } = workspace({ sources: [{ name: 'web', writeKey: 'k', destinations: { Webhooks: { webhooks: [{ url: 'https://ok.example/x', headers }] } } }] });
      const checked = await runCli(['check', '--config', configPath]);
      const served = await runCli(['serve', '--port', '0', '--config', configPath, '--data', join(configPath, '..', 'data')]);
      expect(checked.code, JSON.stringify(headers)).to.equal(1);
      expect(served.code, JSON.stringify(headers)).to.equal(1);
      expect(checked.stderr).to.contain('sources[0].destinations.Webhooks.webhooks[0].headers');
      expect(checked.stderr).to.equal(served.stderr);
    }
  });

  it('stops cleanly on SIGTERM when its stdout was closed (no EPIPE crash)', async function () {
    this.timeout(30_000);
    const { configPath, dataDir } = workspace({ sources: [{ name: 'web', writeKey: 'pipe-key' }] });
    const running = await serve(['--config', configPath, '--data', dataDir]);
    children.push(running.child);
    // The reader of the CLI's stdout goes away (a closed pipe, as with `| head -1`).
    running.child.stdout!.destroy();
    await new Promise((resolve) => setTimeout(resolve, 100));
    running.child.kill('SIGTERM');
    const exit = await running.exited;
    expect(running.stderr()).not.to.match(/EPIPE|Error/);
    expect(exit).to.deep.equal({ code: 0, signal: null });
  });

  it('explains its usage', async () => {
    const help = await runCli(['--help']);
    expect(help.code).to.equal(0);
    expect(help.stdout).to.contain('eventrelay serve --config <file>');
    const wrong = await runCli(['launch']);
    expect(wrong.code).to.equal(2);
    expect(wrong.stderr).to.contain('unknown command "launch"');
  });
});
