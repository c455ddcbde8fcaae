import { describe, it } from 'mocha';
import { expect } from 'chai';
import { ConfigError, ValidationError } from '../../../../eventrelay/src/errors';
import { TransformCompileError } from '../../../src/transform/errors';
import { compileTransform, TRANSFORM_CODE_LIMIT, type TransformResult } from '../../../src/transform/sandbox';
import { withTransform } from './helpers';

/** A webhook message as a URL would get it (spec 2.2 shape, trimmed). */
const MESSAGE = {
  type: 'track',
  event: 'Order Completed',
  userId: 'u-123',
  anonymousId: 'a-456',
  messageId: 'm-789',
  timestamp: '2026-11-28T19:00:00.000Z',
  properties: { orderId: 'o-1', total: 42.5, currency: 'EUR' },
  context: { ip: '203.0.113.5', traits: { email: 'ada@example.com', plan: 'pro' } },
};

function body(result: TransformResult): string {
  if (!result.ok) expect.fail(`expected a body, the transform failed: ${result.reason}`);
  if (result.skip) expect.fail('expected a body, the transform skipped the call');
  return result.body;
}

/** The TransformCompileError a compile rejects with. */
async function refusal(code: string): Promise<TransformCompileError> {
  try {
    (await compileTransform(code)).dispose();
  } catch (error) {
    expect(error).to.be.instanceOf(TransformCompileError);
    return error as TransformCompileError;
  }
  expect.fail('expected a TransformCompileError');
}

describe('transform sandbox: what users write', () => {
  it('reshapes a call into a chat message { text }', async () => {
    await withTransform('function transform(message) {\n  return { text: `${message.event} by ${message.userId}` };\n}', async (transform) => {
      expect(body(await transform.run(MESSAGE))).to.equal('{"text":"Order Completed by u-123"}');
    });
  });

  it('renames fields', async () => {
    const code = 'function transform(m) { return { name: m.event, user: m.userId, id: m.messageId, sentAt: m.timestamp, data: m.properties }; }';
    await withTransform(code, async (transform) => {
      const result = await transform.run(MESSAGE);
      expect(JSON.parse(body(result))).to.deep.equal({ name: 'Order Completed', user: 'u-123', id: 'm-789', sentAt: MESSAGE.timestamp, data: MESSAGE.properties });
    });
  });

  it('removes personal fields before they leave', async () => {
    const code = 'function transform(m) { delete m.context.ip; delete m.context.traits.email; return m; }';
    await withTransform(code, async (transform) => {
      const sent = body(await transform.run(MESSAGE));
      expect(sent).to.not.contain('203.0.113.5').and.not.contain('ada@example.com');
      expect(JSON.parse(sent)).to.deep.equal({ ...MESSAGE, context: { traits: { plan: 'pro' } } });
    });
  });

  it('drops a call by a condition (null or undefined skips the URL), and sends the others', async () => {
    const code = 'function transform(m) { if (m.event === "Page Viewed") return null; if (m.event === "Ping") return; return { event: m.event }; }';
    await withTransform(code, async (transform) => {
      expect(await transform.run({ ...MESSAGE, event: 'Page Viewed' })).to.include({ ok: true, skip: true });
      expect(await transform.run({ ...MESSAGE, event: 'Ping' })).to.include({ ok: true, skip: true });
      expect(body(await transform.run(MESSAGE))).to.equal('{"event":"Order Completed"}');
    });
  });

  it('answers the body serialized once (the bytes to sign) and the output it parses to; runJson takes the message as JSON text', async () => {
    await withTransform('function transform(m) { return [m.userId, { total: m.properties.total }, "é"]; }', async (transform) => {
      const result = await transform.runJson(JSON.stringify(MESSAGE));
      expect(body(result)).to.equal('["u-123",{"total":42.5},"é"]');
      expect(result.ok && !result.skip && result.output).to.deep.equal(['u-123', { total: 42.5 }, 'é']);
      expect(result.durationMs).to.be.a('number').and.at.least(0);
      expect(body(await transform.run(MESSAGE))).to.equal(body(result));
    });
  });

  it('the message goes in and the body comes out as the same text: any script, emoji, a lone surrogate, a message that makes the memory grow', async () => {
    await withTransform('function transform(m) { return { n: m.text.length, end: m.text.slice(-4), text: m.text.length < 100 ? m.text : "" }; }', async (transform) => {
      for (const text of ['', 'héllo wörld ✓ 😀 中文', 'x\u0000y']) {
        expect(body(await transform.run({ text }))).to.equal(JSON.stringify({ n: text.length, end: text.slice(-4), text }));
      }
      // JSON.stringify escapes a lone surrogate; a JSON text given as it is may hold one, and it arrives as itself.
      expect(body(await transform.runJson('{"text":"a\ud800b"}'))).to.equal('{"n":3,"end":"a\\ud800b","text":"a\\ud800b"}');
      // Megabytes of message make the linear memory grow during the call: the body is read from the grown memory.
      for (const size of [1, 2, 4]) {
        const text = `${'é'.repeat(size << 20)}end`;
        expect(body(await transform.run({ text }))).to.equal(JSON.stringify({ n: text.length, end: 'éend', text: '' }));
      }
    }, { memoryBytes: 128 * 1024 * 1024 });
  });

  it('any JSON value is a body: a string, a number, true', async () => {
    await withTransform('function transform(m) { return m.properties.kind === "s" ? "text" : m.properties.kind === "n" ? 7 : true; }', async (transform) => {
      expect(body(await transform.run({ properties: { kind: 's' } }))).to.equal('"text"');
      expect(body(await transform.run({ properties: { kind: 'n' } }))).to.equal('7');
      expect(body(await transform.run({ properties: {} }))).to.equal('true');
    });
  });

  it('Date, Math and JSON work as users expect; a Date becomes its ISO string', async () => {
    const code = 'function transform(m) { const at = new Date(m.timestamp); return { day: at.toISOString().slice(0, 10), at, now: typeof Date.now(), max: Math.max(1, 3), round: Math.round(2.5), json: JSON.stringify({ a: [1] }), parsed: JSON.parse("{\\"b\\":2}").b }; }';
    await withTransform(code, async (transform) => {
      expect(JSON.parse(body(await transform.run(MESSAGE)))).to.deep.equal({ day: '2026-11-28', at: MESSAGE.timestamp, now: 'number', max: 3, round: 3, json: '{"a":[1]}', parsed: 2 });
    });
  });

  it('takes `const transform = (m) => ...` as well as a function declaration, and keeps its own state between calls', async () => {
    await withTransform('let calls = 0;\nconst transform = (m) => ({ call: ++calls, id: m.messageId });', async (transform) => {
      expect(body(await transform.run(MESSAGE))).to.equal('{"call":1,"id":"m-789"}');
      expect(body(await transform.run(MESSAGE))).to.equal('{"call":2,"id":"m-789"}');
    });
  });

  it('Date.now() inside is the host\'s clock', async () => {
    await withTransform('function transform(m) { return Date.now(); }', async (transform) => {
      const before = Date.now();
      const inside = Number(body(await transform.run(MESSAGE)));
      expect(inside).to.be.at.least(before).and.at.most(Date.now());
    });
  });

  it('Promise callbacks never run: a transform is synchronous', async () => {
    const code = 'globalThis.ran = "no";\nfunction transform(m) { Promise.resolve().then(() => { ran = "yes"; }); return ran; }';
    await withTransform(code, async (transform) => {
      expect(body(await transform.run(MESSAGE))).to.equal('"no"');
      await new Promise((resolve) => setImmediate(resolve));
      expect(body(await transform.run(MESSAGE))).to.equal('"no"');
    });
  });

  it('after running out of memory the realm is built again from the code: its globals start over', async () => {
    const code = 'let calls = 0;\nfunction transform(m) { calls++; if (m.event === "bomb") { const a = []; for (;;) a.push("x".repeat(1 << 20) + a.length); } return calls; }';
    await withTransform(code, async (transform) => {
      expect(body(await transform.run(MESSAGE))).to.equal('1');
      expect(body(await transform.run(MESSAGE))).to.equal('2');
      expect(await transform.run({ ...MESSAGE, event: 'bomb' })).to.include({ ok: false, reason: 'ran out of memory (cap 32 MiB); the sandbox was rebuilt' });
      expect(body(await transform.run(MESSAGE))).to.equal('1');
    }, { timeoutMs: 1000 });
  });

  it('a custom error class may set its own name: the reason reads it, with the line and column where the error was made', async () => {
    const code = 'class MissingField extends Error {\n  constructor(field) { super(`missing ${field}`); this.name = "MissingField"; }\n}\nfunction transform(m) {\n  if (!m.email) throw new MissingField("email");\n  return m;\n}';
    await withTransform(code, async (transform) => {
      expect(await transform.run(MESSAGE)).to.include({ ok: false, reason: 'MissingField: missing email (line 2, column 29)' });
    });
  });

  it('dispose frees the realm: a later run throws; a second dispose is harmless', async () => {
    const transform = await compileTransform('function transform(m) { return m; }');
    transform.dispose();
    transform.dispose();
    let error: unknown;
    try {
      await transform.run(MESSAGE);
    } catch (caught) {
      error = caught;
    }
    expect(error).to.be.instanceOf(Error).with.property('message').that.contains('disposed');
  });
});

describe('transform sandbox: code that cannot be used is refused when compiled', () => {
  it('a syntax error: a TransformCompileError (a ValidationError naming `code`) with its line and column', async () => {
    const error = await refusal('function transform(message) {\n  return message +;\n}');
    expect(error).to.be.instanceOf(ValidationError);
    expect(error).to.include({ field: 'code', line: 2, column: 19 });
    expect(error.message).to.contain('does not compile').and.contain('(line 2, column 19)');
  });

  it('code that defines no function transform', async () => {
    for (const code of ['function transfrom(m) { return m; }', 'const transform = 42;', '// nothing']) {
      const error = await refusal(code);
      expect(error.message, code).to.contain('define `function transform(message)`');
      expect(error, code).to.include({ field: 'code', line: undefined, column: undefined });
    }
  });

  it('a top level that throws (with where) or never ends (at its time limit)', async () => {
    const thrown = await refusal('const table = {};\nthrow new Error("no table");\nfunction transform(m) { return m; }');
    expect(thrown).to.include({ line: 2, column: 16 });
    expect(thrown.message).to.contain('Error: no table');
    const looping = await refusal('while (true) {}\nfunction transform(m) { return m; }');
    expect(looping.message).to.contain('ran over 100 ms');
  });

  it('options out of range are a ConfigError naming the option; code that is not a string or too long, a ValidationError', async () => {
    for (const timeoutMs of [0, 1001, 2.5, '100']) {
      let error: unknown;
      await compileTransform('function transform(m) { return m; }', { timeoutMs: timeoutMs as number }).catch((caught: unknown) => (error = caught));
      expect(error, String(timeoutMs)).to.be.instanceOf(ConfigError).with.property('field', 'timeoutMs');
    }
    let small: unknown;
    await compileTransform('function transform(m) { return m; }', { memoryBytes: 1024 * 1024 }).catch((caught: unknown) => (small = caught));
    expect(small).to.be.instanceOf(ConfigError).with.property('field', 'memoryBytes');
    let notString: unknown;
    await compileTransform(42 as unknown as string).catch((caught: unknown) => (notString = caught));
    expect(notString).to.be.instanceOf(ConfigError).with.property('field', 'code');
    let tooLong: unknown;
    await compileTransform(`function transform(m) { return m; }\n//${'x'.repeat(TRANSFORM_CODE_LIMIT)}`).catch((caught: unknown) => (tooLong = caught));
    expect(tooLong).to.be.instanceOf(ValidationError).with.property('field', 'code');
  });
});
