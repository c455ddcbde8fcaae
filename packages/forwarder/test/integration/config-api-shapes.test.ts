import { describe, it, before, after } from 'mocha';
import { expect } from 'chai';
import { createForwarder } from '../../src/service';
import type { Forwarder } from '../../src/service';
import { parseConfig } from '../../src/config';
import { ConfigError } from '../../../eventrelay/src/errors';

const TOKEN = 'admin-token-for-shapes-5e1a';

interface Problem {
  readonly field: string;
  readonly message: string;
}

/** The problems parseConfig finds in `config`, with `base` taken off their fields and messages (the part's own paths). */
function fileProblems(config: unknown, base: string): Problem[] {
  try {
    parseConfig(config, {});
  } catch (error) {
    expect(error).to.be.instanceOf(ConfigError);
    const all = (error as ConfigError).problems ?? [error as ConfigError];
    return all.map((p) => ({ field: p.field!.replace(base, ''), message: p.message.replaceAll(base, '') }));
  }
  return expect.fail('expected a ConfigError');
}

/**
 * A Webhooks destination and schema controls are one schema each, for the config file and for the
 * admin API (src/config/shapes.ts): the same object gets the same problems from both, each at the
 * same path below the part.
 */
describe('the config file and the admin API check a Webhooks destination and schema controls alike', function () {
  this.timeout(30_000);
  let forwarder: Forwarder;
  let url: string;

  before(async () => {
    forwarder = createForwarder({ adminToken: TOKEN, storage: { type: 'memory' }, sources: [{ name: 'web', writeKey: 'wk-web-shapes' }] });
    url = (await forwarder.listen({ port: 0 })).url;
  });
  after(() => forwarder.close());

  async function put(path: string, body: unknown): Promise<{ status: number; json: any }> {
    const response = await fetch(`${url}${path}`, { method: 'PUT', headers: { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
    return { status: response.status, json: await response.json() };
  }

  it('a destination with a problem of each kind: the same fields and messages, every one at once', async () => {
    const destination = {
      enabled: 'yes',
      webhooks: [
        { url: 'ftp://hooks.example.test/in', headers: { 'X-Team': 7 }, filter: { types: ['track', 'purchase'] } },
        { url: 'https://hooks.example.test/b', rateLimit: { perSecond: 0 }, colour: 'blue' },
      ],
      sharedSecret: ['current-secret-1f2e', ''],
      signing: 'svix',
      ordering: 'random',
      retries: 3,
    };
    const base = 'sources[0].destinations.Webhooks.';
    const fromFile = fileProblems({ sources: [{ name: 'web', writeKey: 'k', destinations: { Webhooks: destination } }] }, base);
    const answer = await put('/admin/sources/web/destinations/Webhooks', destination);
    expect(answer.status).to.equal(400);
    expect(answer.json.error.code).to.equal('invalid_request');
    expect(answer.json.error.problems).to.deep.equal(fromFile);
    expect(fromFile.map((p) => p.field)).to.have.members([
      'retries',
      'enabled',
      'webhooks[0].headers["X-Team"]',
      'webhooks[0].filter.types[1]',
      'webhooks[1].colour',
      'webhooks[1].rateLimit.perSecond',
      'sharedSecret[1]',
      'signing',
      'ordering',
      'webhooks[0].url',
    ]);
    // A secret is never repeated.
    expect(JSON.stringify(answer.json)).not.to.contain('current-secret-1f2e');
  });

  it('a destination whose only problems the rules after the schema find (scheme, signing without a secret): the same too', async () => {
    const destination = { webhooks: [{ url: 'ftp://hooks.example.test/in' }], signing: 'standard-webhooks' };
    const base = 'sources[0].destinations.Webhooks.';
    const fromFile = fileProblems({ sources: [{ name: 'web', writeKey: 'k', destinations: { Webhooks: destination } }] }, base);
    const answer = await put('/admin/sources/web/destinations/Webhooks', destination);
    expect(answer.status).to.equal(400);
    expect(answer.json.error.problems).to.deep.equal(fromFile);
    expect(fromFile.map((p) => p.field)).to.deep.equal(['webhooks[0].url', 'sharedSecret']);
  });

  it('schema controls: the same problems from `sources[i].schema` and PUT .../schema', async () => {
    const schema = { blockedEvents: ['ok', ''], blockedTypes: ['track', 'purchase'], allowedEvent: ['typo'] };
    const fromFile = fileProblems({ sources: [{ name: 'web', writeKey: 'k', schema }] }, 'sources[0].schema.');
    const answer = await put('/admin/sources/web/schema', schema);
    expect(answer.status).to.equal(400);
    expect(answer.json.error.problems).to.deep.equal(fromFile);
    expect(fromFile.map((p) => p.field)).to.have.members(['allowedEvent', 'blockedEvents[1]', 'blockedTypes[1]']);
  });
});
