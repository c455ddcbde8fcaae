import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { expect } from 'chai';
import { body, SECRET, signatureOf } from '../fixtures/webhooks/load';

const root = fileURLToPath(new URL('../../../..', import.meta.url));

interface Running {
  readonly child: ChildProcess;
  readonly port: number;
  output(): string;
}

/** Starts an example on a free port (PORT=0) and waits for its "listening on <port>" line. */
function start(example: string): Promise<Running> {
  const child = spawn(process.execPath, [example], {
    cwd: root,
    env: { ...process.env, PORT: '0', WEBHOOK_SECRET: SECRET, DEBUG: '' },
  });
  let output = '';
  return new Promise((resolve, reject) => {
    const onData = (chunk: Buffer): void => {
      output += chunk.toString();
      const match = /listening on (\d+)/.exec(output);
      if (match) resolve({ child, port: Number(match[1]), output: () => output });
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('exit', (code) => reject(new Error(`${example} exited with ${code}: ${output}`)));
  });
}

function stop(running: Running | undefined): Promise<void> {
  if (!running || running.child.exitCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    running.child.once('exit', () => resolve());
    running.child.kill('SIGTERM');
  });
}

/** Waits until the example has printed `text` (its handler logs after answering). */
async function printed(running: Running, text: string): Promise<void> {
  for (let i = 0; i < 100 && !running.output().includes(text); i++) await new Promise((r) => setTimeout(r, 20));
  expect(running.output()).to.include(text);
}

function signedRequest(url: string, name: string, signed: boolean): Request {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (signed) headers['x-signature'] = signatureOf(name);
  return new Request(url, { method: 'POST', headers, body: body(name) });
}

describe('webhook receiver examples (built package, real processes on 127.0.0.1)', function () {
  this.timeout(30_000);

  before(function () {
    if (!existsSync(`${root}/packages/eventrelay/dist/webhooks/index.js`)) {
      throw new Error('dist/webhooks/index.js is missing: run `npm run build` first (the examples import eventrelay/webhooks).');
    }
  });

  const servers: [string, string][] = [
    ['examples/receive-node.mjs', '/'],
    ['examples/receive-express.mjs', '/webhooks'],
    ['examples/receive-fastify.mjs', '/webhooks'],
  ];
  for (const [example, path] of servers) {
    describe(example, () => {
      let running: Running | undefined;
      afterEach(() => stop(running));

      it('answers 2xx to a signed message and 401 to an unsigned one', async () => {
        running = await start(example);
        const url = `http://127.0.0.1:${running.port}${path}`;
        const signed = await fetch(signedRequest(url, 'track-compact.json', true));
        expect(signed.status).to.equal(204);
        await printed(running, 'received track');
        const unsigned = await fetch(signedRequest(url, 'delete.json', false));
        expect(unsigned.status).to.equal(401);
        expect(running.output()).to.not.include('received delete');
      });
    });
  }

  it('the other routes of the Express and Fastify examples still parse JSON', async () => {
    for (const example of ['examples/receive-express.mjs', 'examples/receive-fastify.mjs']) {
      const running = await start(example);
      try {
        const response = await fetch(`http://127.0.0.1:${running.port}/api/echo`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: '{ "hello" : "world" }',
        });
        expect(await response.json(), example).to.deep.equal({ hello: 'world' });
      } finally {
        await stop(running);
      }
    }
  });

  describe('examples/receive-nextjs-route.mjs', () => {
    const saved = process.env.WEBHOOK_SECRET;
    after(() => {
      if (saved === undefined) delete process.env.WEBHOOK_SECRET;
      else process.env.WEBHOOK_SECRET = saved;
    });

    it('loads without WEBHOOK_SECRET (as `next build` does), then answers a real Request: 204 signed, 401 unsigned', async () => {
      delete process.env.WEBHOOK_SECRET;
      const route = (await import(pathToFileURL(`${root}/examples/receive-nextjs-route.mjs`).href)) as {
        POST: (request: Request) => Promise<Response>;
      };
      process.env.WEBHOOK_SECRET = SECRET; // set at run time only
      const url = 'http://127.0.0.1:3000/api/webhooks';
      const logged: string[] = [];
      const log = console.log;
      console.log = (...args: unknown[]) => void logged.push(args.join(' '));
      try {
        expect((await route.POST(signedRequest(url, 'alias.json', true))).status).to.equal(204);
        expect((await route.POST(signedRequest(url, 'delete.json', false))).status).to.equal(401);
      } finally {
        console.log = log;
      }
      expect(logged).to.deep.equal(['received alias']);
    });
  });
});

describe('docs/receiving-webhooks.md: the snippets are the example files, line for line', () => {
  const guide = readFileSync(`${root}/docs/receiving-webhooks.md`, 'utf8');
  const section = guide.slice(0, guide.indexOf('\n## Standard Webhooks'));
  const snippets: [string, string][] = [
    ['\n## Plain Node `http`\n', 'examples/receive-node.mjs'],
    ['\n## Express / Connect\n', 'examples/receive-express.mjs'],
    ['\n## Fastify\n', 'examples/receive-fastify.mjs'],
    ['\n## Next.js route handlers', 'examples/receive-nextjs-route.mjs'],
  ];
  for (const [heading, file] of snippets) {
    it(`${heading.trim().replace(/^## /, '')} = ${file}`, () => {
      expect(section.indexOf(heading), heading).to.be.above(0);
      const after = section.slice(section.indexOf(heading));
      const block = /```js\n([\s\S]*?)```/.exec(after)?.[1];
      // The file is the snippet after its header comment (the lines up to the first blank line).
      const code = readFileSync(`${root}/${file}`, 'utf8').replace(/^(\/\/.*\n)+/, '');
      expect(block, heading).to.be.a('string');
      expect(block).to.equal(code);
    });
  }
});
