import { describe, it } from 'mocha';
import { expect } from 'chai';
import { ConfigError } from '../../packages/eventrelay/src/errors';
import { resolveOptions } from '../../packages/eventrelay/src/client/options';
import { DESTINATION_DEFAULTS, resolveDestinationOptions } from '../../packages/forwarder/src/delivery/options';
import { CONFIG_DEFAULTS, parseConfig } from '../../packages/forwarder/src/config';
import { resolveReceiverOptions } from '../../packages/eventrelay/src/webhooks/options';
import { verifyStandardWebhook } from '../../packages/eventrelay/src/webhooks/schemes/standard-webhooks';
import { GotTransport } from '../../packages/eventrelay/src/transport/got';
import { NodeTransport } from '../../packages/eventrelay/src/transport/node';
import {
  booleanOption,
  durationOption,
  enumOption,
  integerOption,
  MAX_TIMER_MS,
  objectOption,
  secretOption,
  stringOption,
  urlOption,
} from '../../packages/eventrelay/src/internal/options';

function thrown(run: () => unknown): ConfigError {
  try {
    run();
  } catch (error) {
    expect(error).to.be.instanceOf(ConfigError);
    return error as ConfigError;
  }
  expect.fail('no ConfigError');
}

describe('option readers (src/internal/options)', () => {
  it('return the value when it fits', () => {
    expect(integerOption('n', 3, 1, 5)).to.equal(3);
    expect(durationOption('d', 0, 0)).to.equal(0);
    expect(booleanOption('b', false)).to.equal(false);
    expect(enumOption('e', 'full', ['full', 'normal'])).to.equal('full');
    expect(stringOption('s', 'x')).to.equal('x');
    expect(urlOption('u', ' https://h.example/p ').href).to.equal('https://h.example/p');
  });

  it('say what was expected and what came, with the field', () => {
    const integer = thrown(() => integerOption('flushAt', 0, 1));
    expect(integer.message).to.equal('Expected `flushAt` to be an integer >= 1, got `0` (number)');
    expect(integer.field).to.equal('flushAt');
    expect(thrown(() => integerOption('port', 70000, 0, 65535)).message).to.equal('Expected `port` to be an integer from 0 to 65535, got `70000` (number)');
    expect(thrown(() => durationOption('timeout', 1.5, 1)).message).to.equal(
      `Expected \`timeout\` to be a duration in milliseconds, an integer from 1 to ${MAX_TIMER_MS}, got \`1.5\` (number)`,
    );
    expect(thrown(() => booleanOption('gzip', 'yes')).message).to.equal('Expected `gzip` to be a boolean (true or false), got a string of 3 characters');
    expect(thrown(() => enumOption('mode', 'off', ['full', 'normal'])).message).to.equal('Expected `mode` to be one of "full", "normal", got `"off"` (string)');
    expect(thrown(() => objectOption('storage', [])).message).to.equal('Expected `storage` to be an object, got an array');
    expect(thrown(() => stringOption('name', '  ')).message).to.match(/non-empty string, got an empty string \(spaces only\)$/);
  });

  it('refuse a duration a Node timer cannot hold (it would fire at once)', () => {
    expect(thrown(() => durationOption('flushInterval', MAX_TIMER_MS + 1, 1)).field).to.equal('flushInterval');
    expect(durationOption('flushInterval', MAX_TIMER_MS, 1)).to.equal(MAX_TIMER_MS);
  });

  it('never show a secret, even a number', () => {
    const error = thrown(() => secretOption('writeKey', 12345678, 'the write key'));
    expect(error.message).to.equal('Expected `writeKey` to be a non-empty string (the write key), got a number');
    expect(thrown(() => resolveOptions({ writeKey: 87654321 as never, endpoint: 'https://x.example' })).message).not.to.contain('87654321');
    expect(thrown(() => resolveDestinationOptions({ webhooks: [{ url: 'https://x.example' }], sharedSecret: 24681357 as never })).message).not.to.contain('24681357');
  });

  it('check URLs for http or https and a host, never repeating a malformed one', () => {
    expect(thrown(() => urlOption('url', 'ftp://h.example/')).message).to.match(/absolute http or https URL.*got the scheme `"ftp:"`/);
    expect(thrown(() => urlOption('url', 'file:///etc/passwd')).message).to.match(/got the scheme `"file:"`/);
    const malformed = thrown(() => urlOption('url', 'https://user:hunter2@exa mple.com/'));
    expect(malformed.message).to.match(/malformed URL of \d+ characters/);
    expect(malformed.message).not.to.contain('hunter2');
    expect(thrown(() => urlOption('url', undefined)).message).to.match(/got nothing$/);
  });

  it('check other schemes when told, with the same words', () => {
    const rule = { example: 'postgres://user@host:5432/db', schemes: ['postgres:', 'postgresql:'] };
    expect(urlOption('storage.url', 'postgresql://h/db', rule).protocol).to.equal('postgresql:');
    expect(thrown(() => urlOption('storage.url', 'mysql://u:topsecret@h/db', rule)).message).to.equal(
      'Expected `storage.url` to be an absolute postgres or postgresql URL such as "postgres://user@host:5432/db", got the scheme `"mysql:"` (string)',
    );
    expect(thrown(() => parseConfig({ storage: { type: 'postgres', url: 'mysql://u:topsecret@h/db' }, sources: [{ name: 'a', writeKey: 'k' }] }, {})).message).to.match(
      /^Expected `storage.url` to be an absolute postgres or postgresql URL/,
    );
    expect(thrown(() => verifyStandardWebhook('{}', {}, 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', { tolerance: -1 })).message).to.equal(
      `Expected \`tolerance\` to be a duration in milliseconds, an integer >= 0, got \`-1\` (number)`,
    );
  });

  it('are the one policy of the client, the destination, the config file and the receiver', () => {
    const messages = [
      thrown(() => resolveOptions({ writeKey: 'k', endpoint: 'https://x.example', concurrency: 0 })).message,
      thrown(() => resolveDestinationOptions({ webhooks: [{ url: 'https://x.example' }], concurrency: 0 })).message,
      thrown(() => parseConfig({ port: 0.5, sources: [{ name: 'a', writeKey: 'k' }] }, {})).message,
      thrown(() => resolveReceiverOptions({ secret: 'whsec', handler: () => {}, maxBodySize: 0 })).message,
    ];
    expect(messages).to.deep.equal([
      'Expected `concurrency` to be an integer from 1 to 256, got `0` (number)',
      'Expected `concurrency` to be an integer >= 1, got `0` (number)',
      'Expected `port` to be an integer from 0 to 65535, got `0.5` (number)',
      'Expected `maxBodySize` to be an integer >= 1, got `0` (number)',
    ]);
    // One URL rule: the same mistake gets the same words everywhere.
    const schemes = [
      thrown(() => resolveOptions({ writeKey: 'k', endpoint: 'ftp://x.example' })).message,
      thrown(() => resolveDestinationOptions({ webhooks: [{ url: 'ftp://x.example' }] })).message,
      thrown(() => parseConfig({ sources: [{ name: 'a', writeKey: 'k', destinations: { Webhooks: { webhooks: [{ url: 'ftp://x.example' }] } } }] }, {})).message,
    ];
    for (const message of schemes) expect(message).to.match(/to be an absolute http or https URL .*, got the scheme `"ftp:"` \(string\)$/);
  });

  it('check the transports\' options too', () => {
    expect(thrown(() => new NodeTransport({ maxResponseBytes: -1 })).message).to.equal('Expected `maxResponseBytes` to be an integer >= 0, got `-1` (number)');
    expect(thrown(() => new GotTransport({ maxSockets: 0 })).message).to.equal('Expected `maxSockets` to be an integer >= 1, got `0` (number)');
    new NodeTransport({ maxResponseBytes: 0 }).close();
  });

  it('keep the delivery defaults in one place: the config file takes the destination defaults', () => {
    // The config file adds what only the forwarder decides (disableAfter) to the destination's own defaults.
    expect(CONFIG_DEFAULTS.delivery).to.deep.equal({ ...DESTINATION_DEFAULTS, disableAfter: 86_400_000 });
    expect(parseConfig({ sources: [{ name: 'a', writeKey: 'k' }] }, {}).delivery).to.include(DESTINATION_DEFAULTS);
  });
});
