import { after, before, describe, it } from 'mocha';
import { expect } from 'chai';
import releaseSync from '@jitl/quickjs-wasmfile-release-sync';
import { newQuickJSWASMModuleFromVariant, type QuickJSContext } from 'quickjs-emscripten-core';
import { toJsonBytes } from '../../../src/transform/binary-json';
import { seeded } from '../../../../../test/helpers/seeded.mjs';
import type { Transform, TransformResult } from '../../../src/transform/sandbox';
import { withTransform } from './helpers';

const STRINGS = ['', 'plain', 'é à ÿ', 'quote " and \\ backslash', 'ctrl \u0000\u0001\b\f\n\r\t\u001f\u007f', '\u2028\u2029', '日本語', '😀 pair', 'lone \ud800 high', 'lone \udfff low', '\udc00\ud800 reversed', 'x'.repeat(300)];
const KEYS = ['type', 'a', '', '__proto__', 'a"b', 'é', '日本', '😀', '\ud800', 'constructor', 'toString', 'toJSON'];
const INTEGER_KEYS = ['0', '7', '10', '2147483647', '2147483648', '4294967294', '4294967295', '01', '-1', '1.5'];
const NUMBERS = [0, 1, -1, 42, 2 ** 31 - 1, -(2 ** 31), 2 ** 31, -(2 ** 31) - 1, 2 ** 53, 1e21, 1e-7, 5e-324, 0.1 + 0.2, 19.99, -142.5, 123456789012];

function value(next: () => number, depth: number, integerKeys: boolean): unknown {
  const pick = <T>(list: readonly T[]): T => list[Math.floor(next() * list.length)]!;
  const kind = depth > 3 ? Math.floor(next() * 4) : Math.floor(next() * 6);
  if (kind === 0) return pick(STRINGS);
  if (kind === 1) return pick(NUMBERS) * (next() < 0.5 ? 1 : -1);
  if (kind === 2) return pick([true, false, null]);
  if (kind === 3) return Math.floor(next() * 1e6);
  if (kind === 4) return Array.from({ length: Math.floor(next() * 4) }, () => value(next, depth + 1, integerKeys));
  const object: Record<string, unknown> = {};
  for (let i = Math.floor(next() * 5); i > 0; i--) {
    const key = integerKeys && next() < 0.3 ? pick(INTEGER_KEYS) : pick(KEYS);
    Object.defineProperty(object, key, { value: value(next, depth + 1, integerKeys), enumerable: true, writable: true, configurable: true });
  }
  return object;
}

function bytesOf(result: TransformResult): string {
  if (!result.ok) expect.fail(`expected a body, the transform failed: ${result.reason}`);
  if (result.skip) expect.fail('expected a body, the transform skipped the call');
  return result.bytes.toString('utf8');
}

/** The same transform's bodies on the fast path and on the strict serializer (code that names toJSON takes it for every output). */
async function bothPaths(code: string, use: (fast: Transform, strict: Transform) => Promise<void>): Promise<void> {
  await withTransform(code, (fast) => withTransform(`${code}\n// toJSON`, (strict) => use(fast, strict)));
}

describe('transform sandbox: the output as the engine binary JSON', () => {
  let context: QuickJSContext;

  before(async () => {
    context = (await newQuickJSWASMModuleFromVariant(releaseSync)).newContext();
  });

  after(() => context.dispose());

  /** What the engine writes for the value a JSON text parses to. */
  function engineBytes(text: string): Buffer {
    const value = context.unwrapResult(context.evalCode(`JSON.parse(${JSON.stringify(text)})`));
    const written = context.encodeBinaryJSON(value);
    const bytes = Buffer.from(context.getArrayBuffer(written).value);
    written.dispose();
    value.dispose();
    return bytes;
  }

  it('reads the engine bytes of any JSON value without array-index keys into the text JSON.stringify writes', () => {
    const next = seeded(44);
    for (let i = 0; i < 500; i++) {
      const text = JSON.stringify(value(next, 0, false));
      const bytes = engineBytes(text);
      expect(toJsonBytes(bytes, 0, bytes.length, 1e9)?.toString('utf8'), text).to.equal(text);
    }
  });

  it('leaves to the strict serializer what it does not read: array-index keys, undefined, NaN, bytes cut short, strings over the limit', () => {
    for (const code of ['({ 1: 2 })', '({ a: undefined })', '[NaN]', '[1 / 0]', 'new Date(0)', '[2n]', '({ a: new Number(1) })']) {
      const value = context.unwrapResult(context.evalCode(code));
      const written = context.encodeBinaryJSON(value);
      const bytes = Buffer.from(context.getArrayBuffer(written).value);
      written.dispose();
      value.dispose();
      expect(toJsonBytes(bytes, 0, bytes.length, 1e9), code).to.equal(undefined);
    }
    const bytes = engineBytes('{"a":["xyz",1.5]}');
    expect(toJsonBytes(bytes, 0, bytes.length - 1, 1e9)).to.equal(undefined);
    expect(toJsonBytes(bytes, 0, bytes.length, 3)).to.equal(undefined);
    expect(toJsonBytes(bytes, 0, bytes.length, 4)?.toString()).to.equal('{"a":["xyz",1.5]}');
  });

  it('a body from the engine bytes is byte for byte what the strict serializer writes: random messages through a transform that passes them on and adds computed values', async () => {
    const code = `function transform(m) {
  return { m, n: -0, nan: [1 / 3, 2 ** 40, -(2 ** 31)], s: String.fromCharCode(0xd800) + '\\u2028"', o: Object.create(null), nested: [[[]], {}] };
}`;
    await bothPaths(code, async (fast, strict) => {
      const next = seeded(7);
      for (let i = 0; i < 300; i++) {
        const text = JSON.stringify({ type: 'track', properties: value(next, 0, true) });
        expect(bytesOf(await fast.runJson(text)), text).to.equal(bytesOf(await strict.runJson(text)));
      }
    });
  });

  it('outputs the engine writes but JSON writes otherwise go through the strict serializer: array-index keys, an object met twice, a Date, boxed values, a toJSON of a class', async () => {
    const cases: [string, string][] = [
      ['return { b: 1, 10: 2, a: 3, 2: 4 }', '{"2":4,"10":2,"b":1,"a":3}'],
      ['return { b: 1, 4294967294: 2, 4294967295: 3 }', '{"4294967294":2,"b":1,"4294967295":3}'],
      ['const shared = { x: 1 }; return { a: shared, b: shared }', '{"a":{"x":1},"b":{"x":1}}'],
      ['return { at: new Date(0) }', '{"at":"1970-01-01T00:00:00.000Z"}'],
      ['return [new Number(1), new String("s"), new Boolean(false)]', '[1,"s",false]'],
      ['return JSON.parse(\'{"__proto__":{"polluted":true}}\')', '{"__proto__":{"polluted":true}}'],
      ['class Money { constructor(v) { this.v = v; } toJSON() { return this.v + " EUR"; } } return { total: new Money(5) }', '{"total":"5 EUR"}'],
      ['const a = [1, , 3]; return { a: a.length }', '{"a":3}'],
    ];
    for (const [inner, expected] of cases) {
      await withTransform(`function transform(m) { ${inner} }`, async (transform) => {
        expect(bytesOf(await transform.runJson('{}')), inner).to.equal(expected);
      });
    }
  });

  it('a long run of calls leaves nothing behind in the realm: 30,000 calls, and its memory has not grown', async function () {
    this.timeout(60_000);
    const text = JSON.stringify({ type: 'track', properties: { list: Array.from({ length: 40 }, (_, i) => ({ i, s: `value ${i}`, f: i / 7 })) } });
    await withTransform(
      'function transform(m) { return { n: m.properties.list.length, list: m.properties.list }; }',
      async (transform) => {
        const before = transform.memoryInUse;
        for (let i = 0; i < 30_000; i++) {
          const result = transform.runJsonNow(text) ?? (await transform.runJson(text));
          if (!result.ok || result.skip) expect.fail(`call ${i}: ${result.ok ? 'skipped' : result.reason}`);
        }
        // About 2.5 KB a call left behind would be 75 MB: the memory would have grown to its cap.
        expect(transform.memoryInUse).to.equal(before);
      },
      { memoryBytes: 128 * 1024 * 1024 },
    );
  });
});
