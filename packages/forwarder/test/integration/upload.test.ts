import { describe, it, before, after } from 'mocha';
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { request } from 'node:http';
import { DRAIN_BYTES } from '../../src/http/read-body';
import { basic } from './helpers';

interface Answer {
  readonly status: number;
  readonly body: string;
}

/** One upload with node:http: `chunks` written one by one, with or without Content-Length. */
function upload(url: string, chunks: readonly Buffer[], declareLength: boolean): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const length = chunks.reduce((sum, chunk) => sum + chunk.length, 0);
    const headers: Record<string, string | number> = { Authorization: basic('upload-key'), 'Content-Type': 'application/json' };
    if (declareLength) headers['Content-Length'] = length;
    const req = request(`${url}/v1/batch`, { method: 'POST', headers, agent: false }, (res) => {
      const body: Buffer[] = [];
      res.on('data', (chunk: Buffer) => body.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(body).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    // Written as the socket takes it, as a real client streams a body.
    let next = 0;
    const pump = (): void => {
      while (next < chunks.length) {
        if (!req.write(chunks[next++])) {
          req.once('drain', pump);
          return;
        }
      }
      req.end();
    };
    pump();
  });
}

describe('forwarder: oversized uploads (forwarder in its own process, 127.0.0.1)', () => {
  let child: ChildProcess | undefined;
  let url: string;

  before(async function () {
    this.timeout(30_000);
    // In-process, server and client share one event loop and the reset hardly ever shows.
    const config = { storage: { type: 'memory' }, sources: [{ name: 'web', writeKey: 'upload-key' }] };
    const spawned = spawn(process.execPath, ['--import', 'tsx', '--conditions=eventrelay-source', 'packages/forwarder/test/fixtures/serve-in-child.ts', JSON.stringify(config)], { stdio: ['ignore', 'pipe', 'inherit'] });
    child = spawned;
    url = await new Promise<string>((resolve, reject) => {
      let out = '';
      spawned.stdout.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        const match = /listening on (\S+)/.exec(out);
        if (match !== null) resolve(match[1]!);
      });
      spawned.once('exit', (code) => reject(new Error(`the forwarder exited with ${code}`)));
    });
  });

  after(async () => {
    const running = child;
    if (running === undefined || running.exitCode !== null || running.signalCode !== null) return;
    const exited = new Promise((resolve) => running.once('exit', resolve));
    running.kill('SIGTERM');
    await exited;
  });

  // 3 MB: past the 500 KB limit and past the 2 MB at which the connection used to be reset.
  const threeMb = Array.from({ length: 192 }, () => Buffer.alloc(16 * 1024, 0x78));

  it('answers 413 to a 3 MB upload with Content-Length, and the client reads it (no reset)', async function () {
    this.timeout(60_000);
    for (let i = 0; i < 5; i++) {
      const answer = await upload(url, threeMb, true);
      expect(answer.status).to.equal(413);
      expect(JSON.parse(answer.body)).to.have.nested.property('error.code', 'body_too_large');
    }
  });

  it('answers 413 to a 3 MB chunked upload (no Content-Length), and the client reads it', async function () {
    this.timeout(60_000);
    for (let i = 0; i < 5; i++) {
      const answer = await upload(url, threeMb, false);
      expect(answer.status).to.equal(413);
    }
  });

  it('still takes a batch after the oversized uploads', async () => {
    const response = await fetch(`${url}/v1/batch`, {
      method: 'POST',
      headers: { Authorization: basic('upload-key'), 'Content-Type': 'application/json' },
      body: JSON.stringify({ batch: [{ type: 'track', userId: 'u', event: 'After' }] }),
    });
    expect(response.status).to.equal(200);
  });

  it('reads and drops at most DRAIN_BYTES of an oversized upload, then closes the connection', async function () {
    this.timeout(60_000);
    const closed = await new Promise<{ bytes: number; how: string }>((resolve) => {
      const req = request(`${url}/v1/batch`, { method: 'POST', headers: { Authorization: basic('upload-key') }, agent: false });
      let bytes = 0;
      let done = false;
      const finish = (how: string) => {
        if (done) return;
        done = true;
        resolve({ bytes, how });
      };
      req.on('response', (res) => res.resume());
      req.on('error', (error: NodeJS.ErrnoException) => finish(error.code ?? 'error'));
      req.on('close', () => finish('close'));
      const chunk = Buffer.alloc(256 * 1024, 0x78);
      const pump = () => {
        // A sender that never stops: only the server's bound ends it.
        while (!done && bytes < DRAIN_BYTES * 4) {
          bytes += chunk.length;
          if (!req.write(chunk)) {
            req.once('drain', pump);
            return;
          }
        }
        if (!done) req.end();
      };
      pump();
    });
    expect(closed.bytes).to.be.below(DRAIN_BYTES * 4);
  });
});
