import { expect } from 'chai';
import { ConfigError } from '../../../src/errors';
import { DEFAULTS, resolveOptions } from '../../../src/client/options';

describe('resolveOptions', () => {
  const base = { writeKey: 'wk_secret_123', endpoint: 'https://ingest.example.com' };

  it('fills every default', () => {
    const resolved = resolveOptions(base);
    expect(resolved.url.href).to.equal('https://ingest.example.com/v1/batch');
    expect(resolved).to.include({
      flushAt: 20,
      flushInterval: 5000,
      maxRetries: DEFAULTS.maxRetries,
      maxQueueSize: DEFAULTS.maxQueueSize,
      gzip: false,
      disable: false,
    });
  });

  it('keeps a default when an option is passed as undefined', () => {
    expect(resolveOptions({ ...base, flushAt: undefined, flushInterval: undefined }).flushAt).to.equal(20);
  });

  it('accepts `host` as an alias of `endpoint` and joins the path', () => {
    expect(resolveOptions({ writeKey: 'k', host: 'http://127.0.0.1:8787/' }).url.href).to.equal('http://127.0.0.1:8787/v1/batch');
    expect(resolveOptions({ writeKey: 'k', host: 'http://h/base', path: '/x' }).url.href).to.equal('http://h/base/x');
  });

  it('refuses a missing or empty write key without echoing it', () => {
    expect(() => resolveOptions({ endpoint: 'https://x' } as never)).to.throw(ConfigError, /writeKey/);
    expect(() => resolveOptions({ writeKey: '', endpoint: 'https://x' })).to.throw(ConfigError, /empty string/);
  });

  it('refuses a missing, malformed or non-http endpoint', () => {
    expect(() => resolveOptions({ writeKey: 'k' })).to.throw(ConfigError, /endpoint/);
    expect(() => resolveOptions({ writeKey: 'k', endpoint: 'not a url' })).to.throw(ConfigError, /absolute http or https URL/);
    expect(() => resolveOptions({ writeKey: 'k', endpoint: 'ftp://x' })).to.throw(ConfigError, /http or https/);
    expect(() => resolveOptions({ writeKey: 'k', endpoint: 'https://a', host: 'https://b' })).to.throw(ConfigError, /alias/);
  });

  it('says what was expected and what came for an out-of-range option', () => {
    try {
      resolveOptions({ ...base, flushAt: 0 });
      expect.fail('no error');
    } catch (error) {
      expect(error).to.be.instanceOf(ConfigError);
      expect((error as ConfigError).message).to.equal('Expected `flushAt` to be an integer >= 1, got `0` (number)');
      expect((error as ConfigError).field).to.equal('flushAt');
      expect((error as ConfigError).code).to.equal('ERR_CONFIG');
    }
    expect(() => resolveOptions({ ...base, flushInterval: 1.5 })).to.throw(ConfigError, /flushInterval.*1\.5/);
    expect(() => resolveOptions({ ...base, maxQueueSize: '10' as never })).to.throw(ConfigError, /maxQueueSize.*string/);
    expect(() => resolveOptions({ ...base, concurrency: 1000 })).to.throw(ConfigError, /from 1 to 256/);
    expect(() => resolveOptions({ ...base, gzip: 'yes' as never })).to.throw(ConfigError, /gzip.*boolean/);
    expect(() => resolveOptions({ ...base, minRetryDelay: 500, maxRetryDelay: 100 })).to.throw(ConfigError, /maxRetryDelay/);
  });

  it('takes `waitUntil` as a function, and names the field for anything else', () => {
    const waitUntil = (promise: Promise<void>): void => void promise;
    expect(resolveOptions({ ...base, waitUntil }).waitUntil).to.equal(waitUntil);
    expect(resolveOptions(base).waitUntil).to.equal(undefined);
    for (const bad of [true, 'ctx.waitUntil', { waitUntil }, null]) {
      try {
        resolveOptions({ ...base, waitUntil: bad as never });
        expect.fail('no error');
      } catch (error) {
        expect(error).to.be.instanceOf(ConfigError);
        expect((error as ConfigError).field).to.equal('waitUntil');
        expect((error as ConfigError).message).to.match(/^Expected `waitUntil` to be a function that takes a promise/);
      }
    }
  });

  it('refuses `gzip: true` on a runtime without CompressionStream (Vercel Edge), naming the field', () => {
    const original = globalThis.CompressionStream;
    try {
      delete (globalThis as { CompressionStream?: unknown }).CompressionStream;
      expect(resolveOptions({ ...base, gzip: false }).gzip).to.equal(false);
      expect(() => resolveOptions({ ...base, gzip: true })).to.throw(ConfigError, /no CompressionStream/).with.property('field', 'gzip');
    } finally {
      globalThis.CompressionStream = original;
    }
    expect(resolveOptions({ ...base, gzip: true }).gzip).to.equal(true);
  });

  it('never puts the write key in an error message', () => {
    try {
      resolveOptions({ writeKey: 'wk_secret_123', endpoint: 'wk_secret_123' });
      expect.fail('no error');
    } catch (error) {
      expect((error as Error).message).not.to.contain('wk_secret_123');
    }
  });
});
