import { createHmac, randomBytes } from 'node:crypto';
import { expect } from 'chai';
import fc from 'fast-check';
import { Webhook } from 'standardwebhooks';
import { ConfigError, InvalidArgumentError, SignatureVerificationError, WebhookTimestampError } from '../../../src/errors';
import {
  checkStandardWebhook,
  checkStandardWebhookAsync,
  signStandardWebhook,
  signStandardWebhookAsync,
  verifyStandardWebhook,
  verifyStandardWebhookAsync,
} from '../../../src/webhooks/schemes/standard-webhooks';
import { body } from '../../fixtures/webhooks/load';

/** A secret as Standard Webhooks tools make them: `whsec_` + base64 of random bytes. */
const WHSEC = `whsec_${randomBytes(32).toString('base64')}`;
const PLAIN = 'plain-shared-secret-0001';
const RAW = body('page-emoji-u2028.json');
const NOW = Date.parse('2026-05-01T10:00:00.000Z');
const at = (ms: number) => ({ now: ms });

/** Independent reference: HMAC-SHA256 with Node's crypto over `id.timestamp.body`. */
function reference(key: Uint8Array | string, id: string, seconds: number, raw: Uint8Array): string {
  return `v1,${createHmac('sha256', key).update(`${id}.${seconds}.`).update(raw).digest('base64')}`;
}

describe('Standard Webhooks: signStandardWebhook / verifyStandardWebhook', () => {
  it('signs id.timestamp.body with HMAC-SHA256, a whsec_ secret base64-decoded and a plain one as UTF-8', () => {
    const headers = signStandardWebhook(RAW, WHSEC, { id: 'msg_1', timestamp: new Date(NOW) });
    expect(headers).to.deep.equal({
      'webhook-id': 'msg_1',
      'webhook-timestamp': String(NOW / 1000),
      'webhook-signature': reference(Buffer.from(WHSEC.slice(6), 'base64'), 'msg_1', NOW / 1000, RAW),
    });
    const plain = signStandardWebhook(RAW, PLAIN, { id: 'msg_1', timestamp: new Date(NOW) });
    expect(plain['webhook-signature']).to.equal(reference(Buffer.from(PLAIN, 'utf8'), 'msg_1', NOW / 1000, RAW));
  });

  it('sends one signature per secret while rotating, and each secret alone verifies', () => {
    const headers = signStandardWebhook(RAW, [WHSEC, PLAIN], { id: 'msg_2', timestamp: new Date(NOW) });
    expect(headers['webhook-signature'].split(' ')).to.have.length(2);
    expect(verifyStandardWebhook(RAW, headers, WHSEC, at(NOW))).to.equal(true);
    expect(verifyStandardWebhook(RAW, headers, PLAIN, at(NOW))).to.equal(true);
    expect(verifyStandardWebhook(RAW, headers, ['another-secret', PLAIN], at(NOW))).to.equal(true);
    expect(verifyStandardWebhook(RAW, headers, 'another-secret', at(NOW))).to.equal(false);
  });

  it('refuses a changed body, id or timestamp', () => {
    const headers = signStandardWebhook(RAW, WHSEC, { id: 'msg_3', timestamp: new Date(NOW) });
    const changed = Buffer.from(RAW);
    changed[changed.length - 2]! ^= 1;
    expect(verifyStandardWebhook(changed, headers, WHSEC, at(NOW))).to.equal(false);
    expect(verifyStandardWebhook(RAW, { ...headers, 'webhook-id': 'msg_4' }, WHSEC, at(NOW))).to.equal(false);
    expect(verifyStandardWebhook(RAW, { ...headers, 'webhook-timestamp': String(NOW / 1000 + 1) }, WHSEC, at(NOW))).to.equal(false);
  });

  it('accepts a timestamp up to the tolerance away either way, and says so with WebhookTimestampError beyond it', () => {
    const headers = signStandardWebhook(RAW, WHSEC, { id: 'msg_5', timestamp: new Date(NOW) });
    expect(checkStandardWebhook(RAW, headers, WHSEC, at(NOW + 300_000))).to.equal(undefined);
    expect(checkStandardWebhook(RAW, headers, WHSEC, at(NOW - 300_000))).to.equal(undefined);
    const late = checkStandardWebhook(RAW, headers, WHSEC, at(NOW + 301_000));
    expect(late).to.be.instanceOf(WebhookTimestampError);
    expect(late).to.be.instanceOf(SignatureVerificationError);
    expect(late).to.include({ code: 'ERR_WEBHOOK_TIMESTAMP', timestamp: NOW / 1000, tolerance: 300_000 });
    expect(late!.message).to.match(/301 s in the past/);
    const early = checkStandardWebhook(RAW, headers, WHSEC, { now: NOW - 61_000, tolerance: 60_000 });
    expect(early!.message).to.match(/61 s in the future/);
    expect(verifyStandardWebhook(RAW, headers, WHSEC, at(NOW + 301_000))).to.equal(false);
  });

  it('reports a forged signature as a mismatch, not as a timestamp problem, even when the time is off too', () => {
    const headers = signStandardWebhook(RAW, 'someone-else', { id: 'msg_6', timestamp: new Date(NOW) });
    const error = checkStandardWebhook(RAW, headers, WHSEC, at(NOW + 3_600_000));
    expect(error).to.be.instanceOf(SignatureVerificationError);
    expect(error).not.to.be.instanceOf(WebhookTimestampError);
    expect(error!.code).to.equal('ERR_SIGNATURE');
  });

  it('finds the headers in a Fetch Headers object and in any letter case', () => {
    const headers = signStandardWebhook(RAW, WHSEC, { id: 'msg_7', timestamp: new Date(NOW) });
    expect(verifyStandardWebhook(RAW, new Headers(headers), WHSEC, at(NOW))).to.equal(true);
    const upper = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toUpperCase(), v]));
    expect(verifyStandardWebhook(RAW, upper, WHSEC, at(NOW))).to.equal(true);
  });

  it('skips signatures of other versions and malformed entries in the list', () => {
    const headers = signStandardWebhook(RAW, WHSEC, { id: 'msg_8', timestamp: new Date(NOW) });
    const list = `v1a,abc v2,${headers['webhook-signature'].slice(3)} v1,!!! ${headers['webhook-signature']}`;
    expect(verifyStandardWebhook(RAW, { ...headers, 'webhook-signature': list }, WHSEC, at(NOW))).to.equal(true);
  });

  describe('returns false, never throws, for missing or malformed headers', () => {
    const good = signStandardWebhook(RAW, WHSEC, { id: 'msg_9', timestamp: new Date(NOW) });
    const cases: Record<string, unknown> = {
      'no headers at all': {},
      'no webhook-id': { ...good, 'webhook-id': undefined },
      'an empty webhook-id': { ...good, 'webhook-id': '' },
      'a repeated webhook-id': { ...good, 'webhook-id': ['msg_9', 'msg_9'] },
      'no webhook-timestamp': { ...good, 'webhook-timestamp': undefined },
      'a timestamp in ms': { ...good, 'webhook-timestamp': String(NOW) + '000' },
      'a negative timestamp': { ...good, 'webhook-timestamp': '-1' },
      'a fractional timestamp': { ...good, 'webhook-timestamp': `${NOW / 1000}.5` },
      'no webhook-signature': { ...good, 'webhook-signature': undefined },
      'an empty signature': { ...good, 'webhook-signature': '' },
      'a hex signature': { ...good, 'webhook-signature': `v1,${'ab'.repeat(32)}` },
      'a signature without its version': { ...good, 'webhook-signature': good['webhook-signature'].slice(3) },
      'a truncated signature': { ...good, 'webhook-signature': good['webhook-signature'].slice(0, -2) },
      'a null header object': null,
      'a number': 42,
      'an array': [good],
      'a getter that throws': Object.defineProperty({ ...good }, 'webhook-id', { enumerable: true, get: () => { throw new Error('boom'); } }),
    };
    for (const [label, headers] of Object.entries(cases)) {
      it(label, async () => {
        expect(verifyStandardWebhook(RAW, headers as never, WHSEC, at(NOW))).to.equal(false);
        expect(await verifyStandardWebhookAsync(RAW, headers as never, WHSEC, at(NOW))).to.equal(false);
      });
    }

    it('for any header values at all (property test)', async () => {
      const value = fc.oneof(fc.string(), fc.constantFrom(...Object.values(good)), fc.array(fc.string(), { maxLength: 3 }), fc.constant(undefined));
      await fc.assert(
        fc.asyncProperty(value, value, value, async (id, timestamp, signature) => {
          const headers = { 'webhook-id': id, 'webhook-timestamp': timestamp, 'webhook-signature': signature } as never;
          const sync = verifyStandardWebhook(RAW, headers, WHSEC, at(NOW));
          expect(await verifyStandardWebhookAsync(RAW, headers, WHSEC, at(NOW))).to.equal(sync);
          // Only the exact triple the sender made passes.
          expect(sync).to.equal(id === good['webhook-id'] && timestamp === good['webhook-timestamp'] && signature === good['webhook-signature']);
        }),
        { numRuns: 300 },
      );
    });
  });

  it('throws for programming mistakes: parsed JSON, an empty secret, a whsec_ secret that is not base64, an empty id', () => {
    const headers = signStandardWebhook(RAW, WHSEC, { id: 'msg_10', timestamp: new Date(NOW) });
    expect(() => verifyStandardWebhook({ type: 'track' } as never, headers, WHSEC)).to.throw(InvalidArgumentError, /raw request body/);
    expect(() => verifyStandardWebhook(RAW, headers, '')).to.throw(ConfigError);
    const bad = 'whsec_not base64!';
    const error = (() => {
      try {
        verifyStandardWebhook(RAW, headers, bad);
      } catch (caught) {
        return caught as ConfigError;
      }
      return undefined;
    })();
    expect(error).to.be.instanceOf(ConfigError);
    expect(error!.message).to.match(/base64/).and.not.include('not base64!');
    expect(() => signStandardWebhook(RAW, WHSEC, { id: '' })).to.throw(InvalidArgumentError, /`id`/);
    expect(() => signStandardWebhook(RAW, WHSEC, { id: 'a\nb' })).to.throw(InvalidArgumentError, /`id`/);
    expect(() => signStandardWebhook(RAW, WHSEC, { id: 'x', timestamp: new Date(Number.NaN) })).to.throw(InvalidArgumentError, /`timestamp`/);
  });

  it('the Web Crypto functions give the same headers and answers as the node:crypto ones', async () => {
    for (const secret of [WHSEC, PLAIN, [PLAIN, WHSEC]]) {
      const sync = signStandardWebhook(RAW, secret, { id: 'msg_11', timestamp: new Date(NOW) });
      expect(await signStandardWebhookAsync(RAW, secret, { id: 'msg_11', timestamp: new Date(NOW) })).to.deep.equal(sync);
      expect(await checkStandardWebhookAsync(RAW, sync, secret, at(NOW))).to.equal(undefined);
      expect(await checkStandardWebhookAsync(RAW, sync, secret, at(NOW + 400_000))).to.be.instanceOf(WebhookTimestampError);
      expect(await verifyStandardWebhookAsync(RAW.toString('utf8'), sync, secret, at(NOW))).to.equal(true);
    }
  });

  describe('against the independent `standardwebhooks` package', () => {
    it("its Webhook#verify accepts what signStandardWebhook makes (whsec_ secret; plain secret with format 'raw')", () => {
      const now = new Date();
      const headers = signStandardWebhook(RAW, WHSEC, { id: 'msg_12', timestamp: now });
      expect(new Webhook(WHSEC).verify(RAW, { ...headers })).to.deep.equal(JSON.parse(RAW.toString('utf8')));
      const plain = signStandardWebhook(RAW, PLAIN, { id: 'msg_12', timestamp: now });
      expect(new Webhook(PLAIN, { format: 'raw' }).verify(RAW, { ...plain })).to.deep.equal(JSON.parse(RAW.toString('utf8')));
    });

    it('verifyStandardWebhook accepts what its Webhook#sign makes, and refuses it under another secret', () => {
      const now = new Date();
      const seconds = String(Math.floor(now.getTime() / 1000));
      const text = RAW.toString('utf8');
      const headers = { 'webhook-id': 'msg_13', 'webhook-timestamp': seconds, 'webhook-signature': new Webhook(WHSEC).sign('msg_13', now, text) };
      expect(verifyStandardWebhook(RAW, headers, WHSEC)).to.equal(true);
      expect(verifyStandardWebhook(text, headers, WHSEC)).to.equal(true);
      const rawSigned = { ...headers, 'webhook-signature': new Webhook(PLAIN, { format: 'raw' }).sign('msg_13', now, text) };
      expect(verifyStandardWebhook(RAW, rawSigned, PLAIN)).to.equal(true);
      expect(verifyStandardWebhook(RAW, rawSigned, WHSEC)).to.equal(false);
    });

    it('agrees with it on random bodies, ids and keys (property test)', () => {
      fc.assert(
        fc.property(fc.string({ minLength: 1, maxLength: 40 }), fc.uint8Array({ minLength: 1, maxLength: 64 }), fc.string(), (id, key, text) => {
          fc.pre(!/[\r\n]/.test(id));
          const secret = `whsec_${Buffer.from(key).toString('base64')}`;
          const now = new Date();
          const ours = signStandardWebhook(text, secret, { id, timestamp: now });
          expect(ours['webhook-signature']).to.equal(new Webhook(secret).sign(id, now, text));
        }),
        { numRuns: 200 },
      );
    });
  });
});
