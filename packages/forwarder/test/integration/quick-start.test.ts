import { describe, it, after } from 'mocha';
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { codeBlocks, ROOT } from '../../../../test/repo/markdown';
import { waitFor } from './helpers';

const GUIDE = 'docs/running-the-forwarder.md';

/**
 * The quick start of docs/running-the-forwarder.md, run as written in an empty folder by bash with
 * nothing in its environment but PATH and HOME. Two things differ, and only these: `npm install`
 * links the built workspace packages instead of downloading them (the registry does not have this
 * version), the `...` of the `export` line are filled with values, and `serve` gets `--port 0` so
 * that the test never collides with another server on 8787. The forwarder it starts must answer
 * `/health`.
 */
describe('the quick start of docs/running-the-forwarder.md, as written (the built package)', function () {
  this.timeout(60_000);
  let child: ChildProcess | undefined;
  let dir: string | undefined;

  after(() => {
    // The bash started here leads its own process group: end it and what it started (npx, the server).
    if (child?.pid !== undefined && child.exitCode === null) {
      try {
        process.kill(-child.pid, 'SIGTERM');
      } catch {
        // already gone
      }
    }
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it('copies the example config, sets every variable it reads, and serves: /health answers ok', async () => {
    const block = codeBlocks(GUIDE).find((b) => b.marker === 'quick-start');
    expect(block, `${GUIDE} has a block marked quick-start`).to.not.equal(undefined);
    const lines = block!.code.trim().split('\n');
    mkdirSync(join(ROOT, '.tmp'), { recursive: true });
    dir = mkdtempSync(join(ROOT, '.tmp', 'quick-start-'));
    const script: string[] = ['set -e'];
    for (const line of lines) {
      if (line.startsWith('npm install ')) {
        const names = line.slice('npm install '.length).split(/\s+/);
        expect(names).to.deep.equal(['@eventrelay/forwarder', 'better-sqlite3']);
        mkdirSync(join(dir, 'node_modules', '@eventrelay'), { recursive: true });
        mkdirSync(join(dir, 'node_modules', '.bin'));
        symlinkSync(join(ROOT, 'packages/forwarder'), join(dir, 'node_modules/@eventrelay/forwarder'));
        symlinkSync(join(ROOT, 'packages/eventrelay'), join(dir, 'node_modules/eventrelay'));
        symlinkSync(join(ROOT, 'node_modules/better-sqlite3'), join(dir, 'node_modules/better-sqlite3'));
        symlinkSync('../@eventrelay/forwarder/dist/cli.js', join(dir, 'node_modules/.bin/eventrelay'));
      } else if (line.startsWith('export ')) {
        script.push(line.replaceAll('=...', () => `=quick-start-value-${Math.random().toString(36).slice(2)}`));
      } else if (line.startsWith('npx eventrelay serve ')) {
        script.push(`${line} --port 0`);
      } else {
        script.push(line);
      }
    }
    expect(script.at(-1)).to.match(/^npx eventrelay serve --config eventrelay\.config\.json .*--port 0$/);
    let out = '';
    let err = '';
    child = spawn('bash', ['-c', script.join('\n')], { cwd: dir, env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? dir }, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr!.on('data', (c: Buffer) => (err += c.toString()));
    const started = (): { url: string } | undefined =>
      out
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as { event?: string; url: string })
        .find((l) => l.event === 'started');
    await waitFor(() => started() !== undefined || child!.exitCode !== null, 'the forwarder to start', 30_000);
    expect(started(), `stdout: ${out}\nstderr: ${err}`).to.not.equal(undefined);
    const health = await fetch(`${started()!.url}/health`);
    expect(health.status).to.equal(200);
    expect(await health.json()).to.deep.equal({ status: 'ok' });
    process.kill(-child.pid!, 'SIGTERM');
    await waitFor(() => child!.exitCode !== null || child!.signalCode !== null, 'the quick start to stop');
  });
});
