import { expect } from 'chai';
import { ConfigError, InvalidArgumentError } from '../../../src/errors';
import { sign, verifySignature } from '../../../src/webhooks/schemes/signature';
import { signAsync, verifySignatureAsync } from '../../../src/webhooks/schemes/signature-async';
import { body, SECRET, signatureOf, vectors } from '../../fixtures/webhooks/load';

/** The same bytes in every form `rawBody` may take. */
function forms(bytes: Buffer): Record<string, unknown> {
  const padded = new Uint8Array(bytes.length + 7);
  padded.set(bytes, 3);
  return {
    string: bytes.toString('utf8'),
    Buffer: bytes,
    Uint8Array: new Uint8Array(bytes),
    'Uint8Array view at an offset': padded.subarray(3, 3 + bytes.length),
    ArrayBuffer: bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length),
    DataView: new DataView(padded.buffer, 3, bytes.length),
  };
}

describe('webhooks signature (sign / verifySignature)', () => {
  describe('against the OpenSSL vectors', () => {
    for (const v of vectors) {
      it(`signs and verifies ${v.name} under a ${v.secret.length}-character secret`, async () => {
        expect(sign(v.bytes, v.secret)).to.equal(v.signature);
        expect(await signAsync(v.bytes, v.secret)).to.equal(v.signature);
        for (const [form, raw] of Object.entries(forms(v.bytes))) {
          expect(verifySignature(raw as never, v.signature, v.secret), form).to.equal(true);
          expect(await verifySignatureAsync(raw as never, v.signature, v.secret), `${form} async`).to.equal(true);
        }
      });
    }
  });

  it('verifies the bytes received, not a re-serialization of them', () => {
    // whitespace, key order, \u00e9, \/, 1e2: JSON.stringify(JSON.parse(raw)) gives other bytes
    for (const name of ['track-whitespace.json', 'identify-escapes.json']) {
      const raw = body(name);
      const reserialized = JSON.stringify(JSON.parse(raw.toString('utf8')));
      expect(reserialized).to.not.equal(raw.toString('utf8'));
      expect(verifySignature(raw, signatureOf(name), SECRET), name).to.equal(true);
      expect(verifySignature(reserialized, signatureOf(name), SECRET), `${name} re-serialized`).to.equal(false);
    }
  });

  it('hashes strings as UTF-8: emoji, é and a raw U+2028 give the bytes\' signature', () => {
    const raw = body('page-emoji-u2028.json');
    const text = raw.toString('utf8');
    expect(text).to.include('\u2028').and.include('\u{1F600}');
    expect(sign(text, SECRET)).to.equal(signatureOf('page-emoji-u2028.json'));
    expect(verifySignature(text, signatureOf('page-emoji-u2028.json'), SECRET)).to.equal(true);
  });

  it('is sensitive to one changed byte', () => {
    const raw = Buffer.from(body('track-compact.json'));
    const at = raw.length - 2;
    raw[at] = raw[at]! ^ 1;
    expect(verifySignature(raw, signatureOf('track-compact.json'), SECRET)).to.equal(false);
  });

  describe('malformed signatures return false and never throw', () => {
    const raw = body('track-compact.json');
    const good = signatureOf('track-compact.json');
    const cases: Record<string, unknown> = {
      undefined: undefined,
      null: null,
      'an empty string': '',
      '39 characters': good.slice(0, 39),
      '41 characters': `${good}0`,
      '40 hex digits and junk': `${good}zz`,
      '38 good digits and 2 non-hex (Buffer.from would stop there)': `${good.slice(0, 38)}zz`,
      'a non-hex letter inside': `${good.slice(0, 20)}g${good.slice(21)}`,
      'non-ASCII characters of the right length': `${good.slice(0, 38)}éé`,
      'a full-width digit': `${good.slice(0, 39)}\uFF10`,
      'surrounding spaces': ` ${good.slice(1)} `,
      'a sha1= prefix': `sha1=${good}`,
      'the signature of another secret': signatureOf('track-compact.json', vectors[1]!.secret),
      'a number': 12345,
      'an object': { signature: good },
      'an empty array': [],
      'two copies in an array (a repeated header)': [good, good],
      'Node\'s join of a repeated header': `${good}, ${good}`,
    };
    for (const [label, signature] of Object.entries(cases)) {
      it(`${label}`, async () => {
        expect(verifySignature(raw, signature as never, SECRET)).to.equal(false);
        expect(await verifySignatureAsync(raw, signature as never, SECRET)).to.equal(false);
      });
    }
  });

  it('accepts a one-element array (a framework that keeps repeated headers apart)', async () => {
    const raw = body('track-compact.json');
    expect(verifySignature(raw, [signatureOf('track-compact.json')], SECRET)).to.equal(true);
    expect(await verifySignatureAsync(raw, [signatureOf('track-compact.json')], SECRET)).to.equal(true);
  });

  it('accepts uppercase and mixed-case hex: hex is case-insensitive', async () => {
    const raw = body('track-compact.json');
    const good = signatureOf('track-compact.json');
    const mixed = [...good].map((c, i) => (i % 2 ? c.toUpperCase() : c)).join('');
    for (const signature of [good.toUpperCase(), mixed]) {
      expect(signature).to.not.equal(good);
      expect(verifySignature(raw, signature, SECRET)).to.equal(true);
      expect(await verifySignatureAsync(raw, signature, SECRET)).to.equal(true);
    }
  });

  describe('rotation (several secrets)', () => {
    const raw = body('alias.json');
    const signature = signatureOf('alias.json');
    it('passes when any one secret matches, in any position', async () => {
      for (const secrets of [[SECRET, 'old-secret'], ['new-secret', SECRET]]) {
        expect(verifySignature(raw, signature, secrets)).to.equal(true);
        expect(await verifySignatureAsync(raw, signature, secrets)).to.equal(true);
      }
    });
    it('fails when none matches', async () => {
      expect(verifySignature(raw, signature, ['a-secret', 'b-secret'])).to.equal(false);
      expect(await verifySignatureAsync(raw, signature, ['a-secret', 'b-secret'])).to.equal(false);
    });
  });

  describe('programming mistakes throw typed errors that say what to do', () => {
    const signature = signatureOf('track-compact.json');
    const parsedBodies: Record<string, unknown> = {
      'a parsed object': JSON.parse(body('track-compact.json').toString('utf8')),
      'a parsed array': [1, 2],
    };
    for (const [label, parsed] of Object.entries(parsedBodies)) {
      it(`${label} as rawBody, even without a signature`, async () => {
        for (const sig of [signature, undefined]) {
          expect(() => verifySignature(parsed as never, sig, SECRET))
            .to.throw(InvalidArgumentError, 'pass the raw request body, not parsed JSON')
            .with.property('argument', 'rawBody');
          await expectRejection(verifySignatureAsync(parsed as never, sig, SECRET), InvalidArgumentError, 'not parsed JSON');
        }
        expect(() => sign(parsed as never, SECRET)).to.throw(InvalidArgumentError, 'not parsed JSON');
      });
    }
    it('undefined, null or a number as rawBody', () => {
      expect(() => verifySignature(undefined as never, signature, SECRET)).to.throw(InvalidArgumentError, 'got undefined');
      expect(() => verifySignature(null as never, signature, SECRET)).to.throw(InvalidArgumentError, 'got null');
      expect(() => verifySignature(42 as never, signature, SECRET)).to.throw(InvalidArgumentError, 'got number');
    });
    it('an empty or missing secret', async () => {
      const raw = body('track-compact.json');
      for (const secret of ['', undefined, null, [], 7]) {
        expect(() => verifySignature(raw, signature, secret as never), String(secret))
          .to.throw(ConfigError, 'Expected `secret`')
          .with.property('field', 'secret');
        await expectRejection(verifySignatureAsync(raw, signature, secret as never), ConfigError, 'Expected `secret`');
        expect(() => sign(raw, secret as never)).to.throw(ConfigError);
      }
    });
    it('an empty entry in a rotation array, named by index without showing the others', () => {
      const raw = body('track-compact.json');
      const secrets = ['zq-visible-secret-value', ''];
      const error = catchError(() => verifySignature(raw, signature, secrets));
      expect(error).to.be.instanceOf(ConfigError).with.property('field', 'secret[1]');
      expect(error.message).to.include('secret[1]').and.not.include('zq-visible-secret-value');
    });
    it('sign() with an array of secrets', () => {
      expect(() => sign('{}', ['a', 'b'] as never)).to.throw(ConfigError, 'one secret');
    });
  });

  it('sign() gives 40 lowercase hex digits', () => {
    expect(sign('{"type":"delete"}', 'x')).to.match(/^[0-9a-f]{40}$/);
  });
});

async function expectRejection(promise: Promise<unknown>, type: new (...args: never[]) => Error, text: string): Promise<void> {
  try {
    await promise;
  } catch (error) {
    expect(error).to.be.instanceOf(type);
    expect((error as Error).message).to.include(text);
    return;
  }
  expect.fail('expected a rejection');
}

function catchError(fn: () => unknown): Error {
  try {
    fn();
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected a throw');
}
