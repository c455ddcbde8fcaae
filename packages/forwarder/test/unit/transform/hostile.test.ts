/**
 * Hostile code in the transform sandbox: each attempt ends as a failure of that call, within its
 * limit, with a clear reason; the host keeps running, nothing of it is reachable, and the same
 * transform works again on its next call. No timing is asserted (bench/transform.mjs measures).
 */
import { describe, it } from 'mocha';
import { expect } from 'chai';
import { compileTransform, TRANSFORM_OUTPUT_LIMIT, type Transform, type TransformResult } from '../../../src/transform/sandbox';
import { withTransform, type TransformOptions } from './helpers';

const SECRET = 'sk_live_do_not_log_me';
/** The message every call gets; `mode` picks what the transform does, anything else is a good call. */
const message = (mode: string) => ({ type: 'track', event: 'Signed Up', userId: 'u-1', properties: { mode, token: SECRET } });

/** The reason a call failed with; never a part of the message. */
function reason(result: TransformResult): string {
  if (result.ok) expect.fail(`expected a failure, got ${result.skip ? 'a skip' : result.body}`);
  expect(result.reason).to.not.contain(SECRET);
  return result.reason;
}

/** `code`'s `bad()` runs in mode "bad"; any other call returns `{ ok: true }`: proves the transform still works. */
function hostile(bad: string): string {
  return `function bad(m) {\n${bad}\n}\nfunction transform(m) { if (m.properties.mode === 'bad') return bad(m); return { ok: true }; }`;
}

async function stillWorks(transform: Transform): Promise<void> {
  const after = await transform.run(message('good'));
  expect(after).to.include({ ok: true, skip: false });
  expect(after.ok && !after.skip && after.body).to.equal('{"ok":true}');
}

/** One `it` a case, named by `title`: the case's `bad` code fails its call with `expected` as the reason, and the next call works. */
function eachFailsThenWorks(
  cases: readonly (readonly [name: string, bad: string, expected: string])[],
  options?: TransformOptions,
  title: (name: string) => string = (name) => name,
): void {
  for (const [name, bad, expected] of cases) {
    it(title(name), async () => {
      await withTransform(hostile(bad), async (transform) => {
        expect(reason(await transform.run(message('bad')))).to.equal(expected);
        await stillWorks(transform);
      }, options);
    });
  }
}

/** {@link eachFailsThenWorks} where every case fails with the same reason, which names the tests. */
function allFailThenWork(cases: readonly (readonly [name: string, bad: string])[], expected: string, options: TransformOptions): void {
  eachFailsThenWorks(cases.map(([name, bad]) => [name, bad, expected] as const), options, (name) => `${name}: "${expected.split(';')[0]}"; the next call works`);
}

describe('transform sandbox: hostile code', () => {
  describe('time: endless loops end at their limit', () => {
    allFailThenWork([
      ['while (true) {}', 'while (true) {}'],
      ['a loop that catches what stops it', 'for (;;) { try { while (true) {} } catch (e) {} }'],
      ['a loop in a getter of what it throws', 'throw { get message() { while (true) {} } };'],
      ['a loop in toJSON of its output', 'return { toJSON() { for (;;) {} } };'],
      ['catastrophic regular expression backtracking', 'return /(a+)+$/.test("a".repeat(40) + "b");'],
    ], 'timed out after 25 ms', { timeoutMs: 25 });

    it('a run is synchronous and blocks the event loop only while it runs: a timer due meanwhile fires right after the call', async () => {
      await withTransform(hostile('while (true) {}'), async (transform) => {
        let fired = false;
        const timer = setTimeout(() => (fired = true), 1);
        const result = await transform.run(message('bad'));
        expect(reason(result)).to.equal('timed out after 30 ms');
        await new Promise((resolve) => setTimeout(resolve, 1));
        expect(fired).to.equal(true);
        clearTimeout(timer);
      }, { timeoutMs: 30 });
    });
  });

  describe('memory: allocation bombs end at the realm\'s cap, and the realm is built again', () => {
    allFailThenWork([
      ['strings kept in a global', 'globalThis.keep = []; for (;;) keep.push("x".repeat(4 << 20));'],
      ['arrays', 'const a = []; for (;;) a.push(new Array(1 << 16).fill(1));'],
      ['small objects', 'const a = []; for (;;) a.push({ n: a.length });'],
      ['typed arrays', 'const a = []; for (;;) a.push(new Uint8Array(1 << 20));'],
      ['one huge array', 'return new Array(1e8).fill(0).length;'],
    ], 'ran out of memory (cap 24 MiB); the sandbox was rebuilt', { timeoutMs: 1000, memoryBytes: 24 * 1024 * 1024 });

    it('the cap is the sum of what the realm holds, not one allocation: 10 strings of 4 MiB fail under 24 MiB, and pass under 64 MiB', async () => {
      const code = hostile('globalThis.keep = []; for (let i = 0; i < 10; i++) keep.push("x".repeat(4 << 20)); return keep.length;');
      await withTransform(code, async (transform) => {
        expect(reason(await transform.run(message('bad')))).to.equal('ran out of memory (cap 24 MiB); the sandbox was rebuilt');
      }, { timeoutMs: 1000, memoryBytes: 24 * 1024 * 1024 });
      await withTransform(code, async (transform) => {
        expect(await transform.run(message('bad'))).to.include({ ok: true, body: '10' });
      }, { timeoutMs: 1000, memoryBytes: 64 * 1024 * 1024 });
    });

    it('a string too long for the engine is an error of the call', async () => {
      await withTransform(hostile('let s = "x"; for (;;) s += s;'), async (transform) => {
        expect(reason(await transform.run(message('bad')))).to.match(/^InternalError: (string too long|out of memory)|^ran out of memory/);
        await stillWorks(transform);
      }, { timeoutMs: 1000 });
    });
  });

  describe('the stack: deep recursion and deep nesting', () => {
    it('endless recursion is a stack overflow of the call', async () => {
      await withTransform(hostile('function f() { return f() + 1; }\nreturn f();'), async (transform) => {
        expect(reason(await transform.run(message('bad')))).to.match(/^InternalError: stack overflow \(line 2, column \d+\)$/);
        await stillWorks(transform);
      });
    });

    it('a message nested deeper than the host\'s stack allows: the engine stops, the realm is rebuilt, the host is untouched', async () => {
      await withTransform(hostile('return m;'), async (transform) => {
        const deep = `{"properties":{"mode":"bad"},"x":${'['.repeat(50_000)}${']'.repeat(50_000)}}`;
        expect(reason(await transform.runJson(deep))).to.equal('stack overflow (recursion or nesting too deep); the sandbox was rebuilt');
        await stillWorks(transform);
      }, { timeoutMs: 1000 });
    });
  });

  describe('escapes: nothing of the host is reachable', () => {
    it('no require, process, fetch, timers, console, WebAssembly, Buffer or module in the global scope', async () => {
      const names = ['require', 'process', 'fetch', 'setTimeout', 'setInterval', 'setImmediate', 'queueMicrotask', 'console', 'WebAssembly', 'Buffer', 'module', 'exports', 'global', 'XMLHttpRequest', 'importScripts', 'std', 'os'];
      await withTransform(`function transform(m) { return ${JSON.stringify(names)}.filter((name) => typeof globalThis[name] !== 'undefined'); }`, async (transform) => {
        const result = await transform.run(message('good'));
        expect(result.ok && !result.skip && result.output).to.deep.equal([]);
      });
    });

    for (const [name, attempt] of [
      ['this.constructor.constructor', 'return this.constructor.constructor("return process")();'],
      ['the message\'s constructor', 'return m.constructor.constructor("return process.env")();'],
      ['Function("return this")()', 'return Function("return this")().process.mainModule;'],
      ['a function\'s constructor', 'return (() => 0).constructor("return require")()("fs");'],
      ['the async function constructor', 'return Object.getPrototypeOf(async function () {}).constructor("return process")();'],
      ['eval', 'return eval("require(\\"child_process\\")");'],
    ] as const) {
      it(`${name} reaches the sandbox's own Function: a ReferenceError, nothing of the host`, async () => {
        await withTransform(hostile(attempt), async (transform) => {
          const why = reason(await transform.run(message('bad')));
          expect(why).to.match(/^ReferenceError: '(process|require)' is not defined|^output is not JSON: output is a Promise|^TypeError: cannot read property 'mainModule' of undefined/);
          await stillWorks(transform);
        });
      });
    }

    it('import() loads nothing: there is no module loader', async () => {
      await withTransform(hostile('return import("node:fs");'), async (transform) => {
        expect(reason(await transform.run(message('bad')))).to.contain('output is not JSON: output is a Promise');
      });
    });
  });

  describe('prototype pollution leaks neither into the next call nor into another transform', () => {
    const polluter = [
      'function transform(m) {',
      '  if (m.properties.mode === "pollute") {',
      '    Object.prototype.polluted = "yes";',
      '    Array.prototype.push = function () { return "hijacked"; };',
      '    String.prototype.toUpperCase = function () { return "hijacked"; };',
      '    JSON.stringify = function () { return "hijacked"; };',
      '    try { JSON = { stringify: function () { return "hijacked"; } }; } catch (e) {}',
      '    Object.defineProperty(Object.prototype, "toJSON", { value: function () { return "hijacked"; } });',
      '    return null;',
      '  }',
      '  const list = [];',
      '  return { polluted: ({}).polluted === undefined ? "no" : "yes", push: list.push(1), upper: "a".toUpperCase(), json: JSON.stringify({ a: 1 }) };',
      '}',
    ].join('\n');
    const clean = { polluted: 'no', push: 1, upper: 'A', json: '{"a":1}' };

    it('the next call of the same transform sees the built-ins as they were', async () => {
      await withTransform(polluter, async (transform) => {
        const polluting = await transform.run(message('pollute'));
        // defineProperty on a frozen prototype throws: the call fails, and nothing changed.
        expect(reason(polluting)).to.match(/^TypeError: /);
        const next = await transform.run(message('check'));
        expect(next.ok && !next.skip && next.output).to.deep.equal(clean);
      });
    });

    it('in strict mode the change itself is an error of the call', async () => {
      await withTransform('"use strict";\nfunction transform(m) { Object.prototype.polluted = 1; return m; }', async (transform) => {
        expect(reason(await transform.run(message('good')))).to.match(/^TypeError: .*(read-only|not extensible|polluted)/);
      });
    });

    it('another transform, compiled beside it, never sees it (a realm each)', async () => {
      const first = await compileTransform(polluter);
      const second = await compileTransform('globalThis.shared = "first"; function transform(m) { return { polluted: ({}).polluted === undefined ? "no" : "yes", shared: typeof shared }; }');
      const third = await compileTransform('function transform(m) { return { polluted: ({}).polluted === undefined ? "no" : "yes", shared: typeof shared }; }');
      try {
        await first.run(message('pollute'));
        expect((await second.run(message('check'))).ok && (await second.run(message('check')))).to.deep.include({ body: '{"polluted":"no","shared":"string"}' });
        expect(await third.run(message('check'))).to.deep.include({ body: '{"polluted":"no","shared":"undefined"}' });
      } finally {
        first.dispose();
        second.dispose();
        third.dispose();
      }
    });
  });

  describe('output that is not JSON, or too large, is a failure naming where', () => {
    eachFailsThenWorks([
      ['a cycle', 'const a = { b: { token: m.properties.token } }; a.b.c = a; return a;', 'output is not JSON: output.b.c refers back to an object that contains it (a cycle)'],
      ['a BigInt', 'return { n: 1n };', 'output is not JSON: output.n is a BigInt'],
      ['a function inside', 'return { items: [1, () => m.properties.token] };', 'output is not JSON: output.items[1] is a function'],
      ['a function', 'return function () {};', 'output is not JSON: output is a function'],
      ['undefined inside', 'return { a: { "b-c": undefined } };', 'output is not JSON: output.a["b-c"] is undefined'],
      ['NaN', 'return [0 / 0];', 'output is not JSON: output[0] is NaN'],
      ['Infinity', 'return { x: 1 / 0 };', 'output is not JSON: output.x is Infinity'],
      ['a symbol', 'return { s: Symbol("x") };', 'output is not JSON: output.s is a symbol'],
      ['a Promise (an async transform)', 'return Promise.resolve(m);', 'output is not JSON: output is a Promise (transform must return its value, not a Promise: it runs synchronously)'],
      ['over 512 KB of characters', 'return "x".repeat(600 * 1024);', `output is over ${TRANSFORM_OUTPUT_LIMIT} bytes (614402 characters or more)`],
      ['over 512 KB of UTF-8 bytes, under it in characters', 'return "é".repeat(300 * 1024);', `output is 614402 bytes, over the limit of ${TRANSFORM_OUTPUT_LIMIT}`],
    ], { timeoutMs: 1000 });

    it('512 KB exactly is a body', async () => {
      await withTransform(hostile(`return "x".repeat(${TRANSFORM_OUTPUT_LIMIT - 2});`), async (transform) => {
        const result = await transform.run(message('bad'));
        expect(result.ok && !result.skip && Buffer.byteLength(result.body)).to.equal(TRANSFORM_OUTPUT_LIMIT);
      }, { timeoutMs: 1000 });
    });
  });

  describe('throws of anything', () => {
    eachFailsThenWorks([
      ['an Error', 'throw new Error("no plan for " + m.type);', 'Error: no plan for track (line 2, column 16)'],
      ['a TypeError of its own doing', 'return m.nope.deeper;', "TypeError: cannot read property 'deeper' of undefined (line 2, column 14)"],
      ['a string', 'throw "missing email";', 'threw "missing email"'],
      ['a number', 'throw 42;', 'threw a number'],
      ['null', 'throw null;', 'threw null'],
      ['undefined', 'throw undefined;', 'threw undefined'],
      ['an object that is not an Error', 'throw { code: 1 };', 'threw an object that is not an Error'],
      ['an Error with a huge message (cut)', 'throw new Error("x".repeat(10000));', `Error: ${'x'.repeat(293)}… (line 2, column 16)`],
    ]);
  });
});
