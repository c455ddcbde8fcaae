import { describe, it } from 'mocha';
import { expect } from 'chai';
import { ConfigError } from '../../../../eventrelay/src/errors';
import { WebhookDestination } from '../../../src/delivery/destination';
import type { WebhookDestinationOptions } from '../../../src/delivery/destination';
import { FakeTransport } from '../../../../../test/helpers/fake-transport';
import { parseConfig } from '../../../src/config';

function configError(options: unknown): ConfigError {
  try {
    new WebhookDestination({ ...(options as WebhookDestinationOptions), transport: new FakeTransport(() => 200) });
  } catch (error) {
    expect(error).to.be.instanceOf(ConfigError);
    return error as ConfigError;
  }
  throw new Error('expected a ConfigError');
}

const url = 'https://hooks.example.com/in';

describe('WebhookDestination configuration', () => {
  it('needs 1 to 5 webhooks', () => {
    expect(configError({}).field).to.equal('webhooks');
    expect(configError({ webhooks: [] }).message).to.match(/1 to 5/);
    const six = Array.from({ length: 6 }, (_, i) => ({ url: `${url}/${i}` }));
    expect(configError({ webhooks: six }).message).to.match(/at most 5 webhooks.*got 6/);
    expect(() => new WebhookDestination({ webhooks: six.slice(0, 5), transport: new FakeTransport(() => 200) })).not.to.throw();
  });

  it('needs a URL on every entry', () => {
    expect(configError({ webhooks: [{ url }, {}] }).field).to.equal('webhooks[1].url');
    expect(configError({ webhooks: [{ url: '  ' }] }).message).to.match(/empty string/);
  });

  it('refuses schemes other than http and https', () => {
    for (const bad of ['ftp://example.com/x', 'file:///etc/passwd', 'ws://example.com/', 'javascript:alert(1)']) {
      const error = configError({ webhooks: [{ url: bad }] });
      expect(error.field).to.equal('webhooks[0].url');
      expect(error.message).to.match(/http or https/);
    }
  });

  it('refuses a malformed URL without repeating it (it may hold credentials)', () => {
    const error = configError({ webhooks: [{ url: 'https://user:hunter2@exa mple.com/' }] });
    expect(error.field).to.equal('webhooks[0].url');
    expect(error.message).to.match(/malformed/);
    expect(error.message).not.to.include('hunter2');
    expect(configError({ webhooks: [{ url: 'hooks.example.com/in' }] }).field).to.equal('webhooks[0].url');
  });

  it('refuses header names that are not HTTP tokens, naming the header', () => {
    for (const name of ['X-Bad\r\nInjected', 'Has Space', 'Ünicode', '']) {
      const error = configError({ webhooks: [{ url, headers: { [name]: 'v' } }] });
      expect(error.field).to.equal(`webhooks[0].headers[${JSON.stringify(name)}]`);
      expect(error.message).not.to.match(/[\r\n]/);
    }
  });

  it('refuses header values with CR, LF or non-ASCII, naming the header but never the value', () => {
    for (const value of ['Bearer s3cret\r\nX-Evil: 1', 'Bearer s3cret\n', 'Bearer s3crét', 'Bearer s3cret\u0000']) {
      const error = configError({ webhooks: [{ url }, { url, headers: { Authorization: value } }] });
      expect(error.field).to.equal('webhooks[1].headers["Authorization"]');
      expect(error.message).to.include('Authorization');
      expect(error.message).not.to.include('s3cr');
    }
    expect(configError({ webhooks: [{ url, headers: { 'X-Count': 3 } }] }).message).to.match(/string/);
  });

  it('refuses static headers that would replace Content-Type, User-Agent or X-Signature, in any case', () => {
    for (const name of ['Content-Type', 'content-type', 'USER-AGENT', 'x-Signature', 'Content-Length', 'Transfer-Encoding']) {
      const error = configError({ webhooks: [{ url, headers: { [name]: 'text/plain' } }] });
      expect(error.message).to.include(name);
      expect(error.message).to.match(/not allowed/);
    }
  });

  it('refuses the same header twice in different case', () => {
    expect(configError({ webhooks: [{ url, headers: { 'X-Token': 'a', 'x-token': 'b' } }] }).message).to.match(/twice/);
  });

  it('checks numbers and the type of the secret without showing the secret', () => {
    expect(configError({ webhooks: [{ url }], timeout: 0 }).field).to.equal('timeout');
    expect(configError({ webhooks: [{ url }], timeout: Number.NaN }).field).to.equal('timeout');
    expect(configError({ webhooks: [{ url }], concurrency: 1.5 }).field).to.equal('concurrency');
    expect(configError({ webhooks: [{ url }], retryWindow: -1 }).field).to.equal('retryWindow');
    expect(configError({ webhooks: [{ url }], minRetryDelay: 5000, maxRetryDelay: 1000 }).field).to.equal('maxRetryDelay');
    expect(configError({ webhooks: [{ url }], sharedSecret: 12345 }).field).to.equal('sharedSecret');
  });

  it('the receiver has 5000 ms by default, and undefined options keep their defaults', async () => {
    const transport = new FakeTransport(() => 200);
    const destination = new WebhookDestination({ webhooks: [{ url }], timeout: undefined, concurrency: undefined, transport });
    await destination.attempt('{}', { attempt: 1, firstAttemptAt: Date.now() });
    expect(transport.requests[0]?.timeout).to.equal(5000);
    await destination.close();
  });
});

describe('static headers: one rule for WebhookDestination and the config file', () => {
  const cases: Record<string, unknown>[] = [
    { 'X-Team': 'web' },
    { 'Content-Type': 'text/plain' },
    { 'x-signature': 'forged' },
    { Host: 'other.example' },
    { 'X-Token': 'a', 'x-token': 'b' },
    { 'X-Name': 'caf\u00e9' },
    { 'X-Line': 'a\r\nX-Evil: 1' },
    { 'Bad Name': 'v' },
    { 'X-Count': 3 },
  ];

  it('refuses a static Host header: Host comes from the URL and would be sent twice', () => {
    for (const name of ['Host', 'host', 'HOST']) {
      const error = configError({ webhooks: [{ url, headers: { [name]: 'other.example' } }] });
      expect(error.message).to.match(/not allowed/).and.match(/Host comes from the URL/);
    }
  });

  it('the config file (`eventrelay check`) refuses exactly what the destination (`serve`) refuses', () => {
    for (const headers of cases) {
      let destination: unknown;
      let config: unknown;
      try {
        new WebhookDestination({ webhooks: [{ url, headers: headers as Record<string, string> }], transport: new FakeTransport(() => 200) });
      } catch (error) {
        destination = error;
      }
      try {
        parseConfig({ sources: [{ name: 'a', writeKey: 'k', destinations: { Webhooks: { webhooks: [{ url, headers }] } } }] }, {});
      } catch (error) {
        config = error;
      }
      expect(config === undefined, JSON.stringify(headers)).to.equal(destination === undefined);
      expect(config ?? destination).to.satisfy((e: unknown) => e === undefined || e instanceof ConfigError);
      // A value that is not a string fails earlier in the config, as a SecretValue, with its own words.
      if (config !== undefined && Object.values(headers).every((v) => typeof v === 'string')) {
        expect((config as ConfigError).message.replace(/sources\[0\]\.destinations\.Webhooks\./g, '')).to.equal((destination as ConfigError).message);
      }
    }
  });
});
