import { describe, it } from 'mocha';
import { expect } from 'chai';
import { ConfigError } from '../../../eventrelay/src/errors';
import { parseConfig } from '../../src/config';

const FIELD = 'sources[0].destinations.Webhooks.webhooks[0].transform';

function withTransform(transform: unknown) {
  return { sources: [{ name: 'web', writeKey: 'wk-web', destinations: { Webhooks: { webhooks: [{ url: 'https://example.test/hook', transform }, { url: 'https://example.test/raw' }] } } }] };
}

function problemOf(transform: unknown): ConfigError {
  try {
    parseConfig(withTransform(transform), {});
  } catch (error) {
    expect(error).to.be.instanceOf(ConfigError);
    return error as ConfigError;
  }
  throw new Error('expected a ConfigError');
}

describe('parseConfig: a URL\'s transform', () => {
  it('keeps `{ code, timeoutMs }` as given on its URL, and nothing on the others', () => {
    const code = 'function transform(message) {\n  return { text: message.event };\n}';
    const config = parseConfig(withTransform({ code, timeoutMs: 250 }), {});
    const webhooks = config.sources[0]!.webhooks!.webhooks;
    expect(webhooks[0]!.transform).to.deep.equal({ code, timeoutMs: 250 });
    expect(webhooks[1]).to.not.have.property('transform');
    expect(parseConfig(withTransform({ code }), {}).sources[0]!.webhooks!.webhooks[0]!.transform).to.deep.equal({ code });
  });

  it('refuses code that does not parse, naming `...transform.code` with the line and column, and runs none of it', () => {
    const error = problemOf({ code: 'globalThis.ran = true;\nfunction transform(message) {\n  return message.;\n}' });
    expect(error.field).to.equal(`${FIELD}.code`);
    expect(error.message).to.match(/SyntaxError: .*\(line 3, column \d+\)/);
    expect((globalThis as { ran?: boolean }).ran).to.equal(undefined);
  });

  it('refuses code that declares no transform, an empty code, a timeoutMs out of 1 to 1000, and an unknown field', () => {
    expect(problemOf({ code: 'function transfer(m) { return m; }' }).message).to.contain('found none');
    expect(problemOf({ code: '' }).field).to.equal(`${FIELD}.code`);
    expect(problemOf({ code: 'function transform(m) { return m; }', timeoutMs: 5000 }).field).to.equal(`${FIELD}.timeoutMs`);
    expect(problemOf({ code: 'function transform(m) { return m; }', timeoutMs: 0 }).field).to.equal(`${FIELD}.timeoutMs`);
    expect(problemOf({ code: 'function transform(m) { return m; }', extra: 1 }).field).to.equal(`${FIELD}.extra`);
    expect(problemOf({ code: `function transform(m) { return m; }\n//${'x'.repeat(64 * 1024)}` }).message).to.contain('at most 65536 bytes');
  });
});
