import { describe, it } from 'mocha';
import { expect } from 'chai';
import { parseConfig } from '../../src/config';
import { ConfigError } from '../../../eventrelay/src/errors';
import { describeChange } from '../../src/registry/reconcile';

describe('parseConfig: endpoint protection', () => {
  it('delivery.disableAfter: 24 h by default, 0 for never, else a duration in ms naming the field', () => {
    expect(parseConfig({}, {}).delivery.disableAfter).to.equal(86_400_000);
    expect(parseConfig({ delivery: { disableAfter: 0 } }, {}).delivery.disableAfter).to.equal(0);
    expect(parseConfig({ delivery: { disableAfter: 3_600_000 } }, {}).delivery.disableAfter).to.equal(3_600_000);
    for (const bad of [-1, 1.5, '1d', true]) {
      expect(() => parseConfig({ delivery: { disableAfter: bad } }, {})).to.throw(ConfigError).with.property('field', 'delivery.disableAfter');
    }
  });

  it('notify: a URL and a shared secret (either may be { "env" }), each refused naming its field', () => {
    expect(parseConfig({}, {}).notify).to.equal(undefined);
    const env = { NOTIFY_URL: 'https://ops.example.com/eventrelay', NOTIFY_SECRET: 's3cret' };
    expect(parseConfig({ notify: { url: { env: 'NOTIFY_URL' }, sharedSecret: { env: 'NOTIFY_SECRET' } } }, env).notify).to.deep.equal({
      url: 'https://ops.example.com/eventrelay',
      sharedSecret: 's3cret',
    });
    const bad: [unknown, string][] = [
      [{ url: 'https://ops.example.com/' }, 'notify.sharedSecret'],
      [{ url: 'ftp://ops.example.com/', sharedSecret: 's' }, 'notify.url'],
      [{ sharedSecret: 's' }, 'notify.url'],
      [{ url: 'https://ops.example.com/', sharedSecret: '   ' }, 'notify.sharedSecret'],
      [{ url: 'https://ops.example.com/', sharedSecret: 's', headers: {} }, 'notify.headers'],
      ['https://ops.example.com/', 'notify'],
    ];
    for (const [notify, field] of bad) {
      let error: unknown;
      try {
        parseConfig({ notify }, {});
      } catch (e) {
        error = e;
      }
      expect(error, field).to.be.instanceOf(ConfigError).with.property('field', field);
      expect((error as Error).message).not.to.contain('s3cret');
    }
  });
});

describe('eventrelay apply: the difference of a rate limit', () => {
  it('names a rateLimit added, changed or removed', () => {
    const entry = { url: 'https://hooks.example.com/in', headers: {} };
    const settings = (rateLimit?: { perSecond: number }) => ({ webhooks: [rateLimit === undefined ? entry : { ...entry, rateLimit }], sharedSecret: undefined, signing: 'x-signature' as const });
    const record = (rateLimit?: { perSecond: number }) => ({ enabled: true, webhooks: settings(rateLimit) });
    expect(describeChange(record(), true, settings({ perSecond: 20 }))).to.deep.equal(['Webhooks.webhooks[0].rateLimit: none → 20/s']);
    expect(describeChange(record({ perSecond: 20 }), true, settings({ perSecond: 0.5 }))).to.deep.equal(['Webhooks.webhooks[0].rateLimit: 20/s → 0.5/s']);
    expect(describeChange(record({ perSecond: 20 }), true, settings())).to.deep.equal(['Webhooks.webhooks[0].rateLimit: 20/s → none']);
    expect(describeChange(record({ perSecond: 20 }), true, settings({ perSecond: 20 }))).to.deep.equal([]);
  });
});
