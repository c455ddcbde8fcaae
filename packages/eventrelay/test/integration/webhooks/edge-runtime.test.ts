import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { build } from 'esbuild';
import { EdgeRuntime } from 'edge-runtime';
import { body, SECRET, signatureOf } from '../../fixtures/webhooks/load';

const root = fileURLToPath(new URL('../../../../..', import.meta.url));
const entry = `${root}/packages/eventrelay/dist/webhooks/index.js`;

/**
 * The built `eventrelay/webhooks`, bundled the way an Edge route's bundler would (browser
 * conditions, dependencies inlined) into a script that sets `globalThis.webhooks`.
 */
async function bundle(): Promise<string> {
  const result = await build({
    entryPoints: [entry],
    bundle: true,
    write: false,
    format: 'iife',
    globalName: 'webhooks',
    platform: 'browser',
    target: 'es2022',
    logLevel: 'silent',
  });
  return result.outputFiles[0]!.text;
}

describe('createFetchHandler in the Edge runtime (the edge-runtime package: setTimeout returns a number, no node:crypto)', function () {
  this.timeout(30_000);
  let runtime: EdgeRuntime;

  before(async function () {
    if (!existsSync(entry)) throw new Error('dist/webhooks/index.js is missing: run `npm run build` first.');
    runtime = new EdgeRuntime({ initialCode: await bundle() });
  });

  it('is a runtime whose timers are numbers and that has no process.getBuiltinModule', () => {
    expect(runtime.evaluate<string>('typeof setTimeout(() => {}, 0)')).to.equal('number');
    expect(runtime.evaluate<string>('typeof globalThis.process?.getBuiltinModule')).to.equal('undefined');
  });

  it('answers 204 to a signed request (handler called once) and 401 to a bad signature', async () => {
    const raw = body('track-compact.json').toString('utf8');
    runtime.context.RAW = raw;
    runtime.context.SECRET = SECRET;
    runtime.context.GOOD = signatureOf('track-compact.json');
    const result = await runtime.evaluate<Promise<{ signed: number; bad: number; handled: string[]; errors: string[] }>>(`(async () => {
      const handled = [];
      const errors = [];
      const handle = webhooks.createFetchHandler({
        secret: SECRET,
        handler: (message) => { handled.push(message.type); },
        onError: (error, status) => { errors.push(error.name + ' ' + status); },
      });
      const request = (signature) => new Request('https://example.test/api/webhooks', {
        method: 'POST', body: RAW, headers: { 'content-type': 'application/json', 'x-signature': signature },
      });
      const signed = (await handle(request(GOOD))).status;
      const bad = (await handle(request('0'.repeat(40)))).status;
      return { signed, bad, handled, errors };
    })()`);
    expect(result).to.deep.equal({ signed: 204, bad: 401, handled: ['track'], errors: ['SignatureVerificationError 401'] });
  });

  it('verifies Standard Webhooks with Web Crypto: 204 signed, 401 for a replay outside the tolerance', async () => {
    runtime.context.RAW = body('alias.json').toString('utf8');
    runtime.context.SECRET = SECRET;
    const result = await runtime.evaluate<Promise<{ signed: number; replay: number; errors: string[] }>>(`(async () => {
      const errors = [];
      const handle = webhooks.createFetchHandler({
        secret: SECRET, scheme: 'standard-webhooks', handler: () => {},
        onError: (error, status) => { errors.push(error.code + ' ' + status); },
      });
      const request = (headers) => new Request('https://example.test/hook', { method: 'POST', body: RAW, headers });
      const now = await webhooks.signStandardWebhookAsync(RAW, SECRET, { id: 'msg_1' });
      const old = await webhooks.signStandardWebhookAsync(RAW, SECRET, { id: 'msg_1', timestamp: new Date(Date.now() - 600000) });
      return { signed: (await handle(request(now))).status, replay: (await handle(request(old))).status, errors };
    })()`);
    expect(result).to.deep.equal({ signed: 204, replay: 401, errors: ['ERR_WEBHOOK_TIMESTAMP 401'] });
  });
});
