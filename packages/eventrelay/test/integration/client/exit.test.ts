import { describe, it, before } from 'mocha';
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';
import { resolve } from 'node:path';
import { startSink } from '../../../../../test/helpers/sink';

const DIST = pathToFileURL(resolve('packages/eventrelay/dist/index.js')).href;

interface Report {
  readonly calls: number;
  readonly codes: (string | null)[];
}

/** Runs a script on the built package; it prints what its callbacks saw when the process exits. */
function runScript(body: string, env: Record<string, string>): Promise<{ code: number | null; report: Report; stderr: string }> {
  const script = `
    import { Analytics } from ${JSON.stringify(DIST)};
    const seen = { calls: 0, codes: [] };
    const record = (error) => { seen.calls++; seen.codes.push(error ? error.code : null); };
    process.on('exit', () => process.stdout.write(JSON.stringify(seen)));
    ${body}
  `;
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
      env: { PATH: process.env.PATH ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('error', fail);
    child.on('close', (code) => {
      try {
        done({ code, report: JSON.parse(stdout) as Report, stderr });
      } catch {
        fail(new Error(`no report from the script (exit ${code}):\n${stdout}\n${stderr}`));
      }
    });
  });
}

describe('Analytics when the process ends (child processes on the built package)', () => {
  before(function () {
    if (!existsSync(resolve('packages/eventrelay/dist/index.js'))) throw new Error('dist/ is missing: run `npm run build` first (npm test does)');
  });

  it('a script that calls track() five times and ends delivers them and runs every callback', async () => {
    const sink = await startSink();
    try {
      const { code, report } = await runScript(
        `const analytics = new Analytics({ writeKey: 'k', endpoint: process.env.URL });
         for (let i = 0; i < 5; i++) analytics.track({ userId: 'u', event: 'Exit ' + i }, record);`,
        { URL: sink.url },
      );
      expect(code).to.equal(0);
      expect(sink.messages().map((m) => m.event)).to.deep.equal(['Exit 0', 'Exit 1', 'Exit 2', 'Exit 3', 'Exit 4']);
      expect(report).to.deep.equal({ calls: 5, codes: [null, null, null, null, null] });
    } finally {
      await sink.close();
    }
  });

  it('holds the process through the retries of an endpoint answering 503, and every callback sees the failure', async () => {
    const sink = await startSink((_request, res) => res.writeHead(503).end());
    try {
      const { code, report } = await runScript(
        `const analytics = new Analytics({ writeKey: 'k', endpoint: process.env.URL, maxRetries: 2, minRetryDelay: 50, maxRetryDelay: 100 });
         for (let i = 0; i < 5; i++) analytics.track({ userId: 'u', event: 'Down ' + i }, record);`,
        { URL: sink.url },
      );
      expect(code).to.equal(0);
      expect(sink.requests).to.have.length(3);
      expect(report).to.deep.equal({ calls: 5, codes: ['ERR_HTTP', 'ERR_HTTP', 'ERR_HTTP', 'ERR_HTTP', 'ERR_HTTP'] });
    } finally {
      await sink.close();
    }
  });

  it('after closeAndFlush({ timeout }) resolves with messages still retrying, their callbacks get ERR_CLOSE_TIMEOUT and the process exits', async () => {
    const sink = await startSink((_request, res) => res.writeHead(503).end());
    try {
      const { code, report } = await runScript(
        `const analytics = new Analytics({ writeKey: 'k', endpoint: process.env.URL, minRetryDelay: 60000, maxRetryDelay: 60000 });
         for (let i = 0; i < 3; i++) analytics.track({ userId: 'u', event: 'Closing ' + i }, record);
         await analytics.closeAndFlush({ timeout: 300 });
         if (seen.calls !== 3) throw new Error('callbacks not run when closeAndFlush resolved: ' + seen.calls);`,
        { URL: sink.url },
      );
      expect(code).to.equal(0);
      expect(report).to.deep.equal({ calls: 3, codes: ['ERR_CLOSE_TIMEOUT', 'ERR_CLOSE_TIMEOUT', 'ERR_CLOSE_TIMEOUT'] });
      // One attempt, no retry after the timeout (the next one was a minute away, and is cancelled).
      expect(sink.requests).to.have.length(1);
    } finally {
      await sink.close();
    }
  });

  it('a short script with a typo in the port and no listener is told at once, and at the close timeout, that the connection was refused', async () => {
    // A port nobody listens on: taken, then given back.
    const server = createServer();
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    const port = (server.address() as AddressInfo).port;
    await new Promise((done) => server.close(done));
    const { code, report, stderr } = await runScript(
      `const analytics = new Analytics({ writeKey: 'wk-told-5d1e', endpoint: process.env.URL });
       analytics.track({ event: 'No user' });
       analytics.track({ userId: 'u', event: 'E' });
       await analytics.closeAndFlush({ timeout: 1500 });`,
      { URL: `http://127.0.0.1:${port}/v1` },
    );
    expect(code).to.equal(0);
    expect(report).to.deep.equal({ calls: 0, codes: [] });
    const warnings = stderr.split('\n').filter((line) => line.includes('EventRelayWarning'));
    expect(warnings, stderr).to.have.length(3);
    expect(warnings[0]).to.match(/\[ERR_VALIDATION\] EventRelayWarning: .*`userId`.*analytics\.on\('error'/);
    // The first refused connection, at once (the endpoint's /v1 not doubled), then the close timeout naming it.
    expect(warnings[1]).to.include(`[ERR_NETWORK] EventRelayWarning: Request to http://127.0.0.1:${port}/v1/batch failed: connection refused (ECONNREFUSED); retrying`);
    expect(warnings[2]).to.match(/\[ERR_CLOSE_TIMEOUT\] EventRelayWarning: closeAndFlush\(\) timed out after 1500 ms .*its last attempt failed: ERR_NETWORK: .*ECONNREFUSED/);
    expect(stderr).not.to.contain('wk-told-5d1e');
  });
});
