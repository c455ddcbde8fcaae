import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { startSink } from '../../../../test/helpers/sink';

const root = fileURLToPath(new URL('../../../..', import.meta.url));

function start(example: string, env: Record<string, string>): { child: ChildProcess; output: () => string; line: (re: RegExp) => Promise<RegExpMatchArray> } {
  const child = spawn(process.execPath, [example], { cwd: root, env: { ...process.env, DEBUG: '', ...env } });
  let output = '';
  const waiters: (() => void)[] = [];
  const onData = (chunk: Buffer) => {
    output += chunk.toString();
    waiters.splice(0).forEach((w) => w());
  };
  child.stdout?.on('data', onData);
  child.stderr?.on('data', onData);
  const line = (re: RegExp) =>
    new Promise<RegExpMatchArray>((resolve, reject) => {
      const check = () => {
        const match = output.match(re);
        if (match) return resolve(match);
        if (child.exitCode !== null) return reject(new Error(`exited: ${output}`));
        waiters.push(check);
      };
      child.once('exit', () => waiters.splice(0).forEach((w) => w()));
      check();
    });
  return { child, output: () => output, line };
}

describe('client examples (run against a local sink)', function () {
  this.timeout(30_000);

  it('examples/track-express.mjs tracks on a route and flushes on SIGTERM', async () => {
    const sink = await startSink();
    const app = start('examples/track-express.mjs', { PORT: '0', EVENTRELAY_ENDPOINT: sink.url, EVENTRELAY_WRITE_KEY: 'wk_example' });
    try {
      const [, port] = await app.line(/listening on (\d+)/);
      const response = await fetch(`http://127.0.0.1:${port}/signup`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ userId: 'user-7', plan: 'pro' }),
      });
      expect(response.status).to.equal(201);
      expect(sink.requests).to.have.length(0); // queued, not yet sent
      app.child.kill('SIGTERM');
      await app.line(/flushed/);
      const messages = sink.messages();
      expect(messages.map((m) => m.type)).to.deep.equal(['identify', 'track']);
      expect(messages[1]).to.include({ userId: 'user-7', event: 'Signed Up' });
      expect(sink.requests[0]?.headers.authorization).to.equal(`Basic ${Buffer.from('wk_example:').toString('base64')}`);
    } finally {
      app.child.kill('SIGKILL');
      await sink.close();
    }
  });

  it('examples/serverless-handler.mjs flushes before the handler returns', async () => {
    const sink = await startSink();
    const fn = start('examples/serverless-handler.mjs', { EVENTRELAY_ENDPOINT: sink.url });
    try {
      await fn.line(/handler answered 200/);
      const code = await new Promise((resolve) => (fn.child.exitCode !== null ? resolve(fn.child.exitCode) : fn.child.once('exit', resolve)));
      expect(code).to.equal(0);
      expect(sink.messages()).to.have.length(1);
      expect(sink.messages()[0]).to.include({ userId: 'user-42', event: 'Function Invoked' });
    } finally {
      fn.child.kill('SIGKILL');
      await sink.close();
    }
  });
});
