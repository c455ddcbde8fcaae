import { describe, it } from 'mocha';
import { expect } from 'chai';
import { ValidationError } from 'eventrelay/internal';
import { mergeWebhooksPatch } from '../../../src/registry/webhooks-patch';
import type { StoredWebhooks } from '../../../src/store/contract';

const current: StoredWebhooks = {
  signing: 'x-signature',
  sharedSecret: 'stored-secret',
  ordering: 'user',
  webhooks: [
    { url: 'https://user:pw@a.test/hook?token=1', headers: { Authorization: 'Bearer a', 'X-Team': 'growth' }, rateLimit: { perSecond: 5 } },
    { url: 'https://b.test/hook', headers: {}, filter: { types: ['track'] } },
  ],
};

describe('mergeWebhooksPatch', () => {
  it('leaves every field it is not given as stored, the secret included', () => {
    const merged = mergeWebhooksPatch(false, current, { signing: 'both' });
    expect(merged.sameSecret).to.equal(true);
    expect(merged.body).to.deep.equal({ enabled: false, signing: 'both', ordering: 'user', webhooks: current.webhooks, sharedSecret: 'stored-secret' });
  });

  it('changes a URL by its index only where the entry says: headers by name in any case, null removes', () => {
    const merged = mergeWebhooksPatch(true, current, {
      webhooks: [{ from: 1 }, { from: 0, headers: { 'x-team': null, 'X-New': 'n' }, rateLimit: null }, { url: 'https://c.test/' }],
    });
    expect(merged.body.webhooks).to.deep.equal([
      { url: 'https://b.test/hook', headers: {}, filter: { types: ['track'] } },
      { url: 'https://user:pw@a.test/hook?token=1', headers: { Authorization: 'Bearer a', 'X-New': 'n' } },
      { url: 'https://c.test/' },
    ]);
  });

  it('keeps a URL\'s batch as stored unless the entry names it: replaced whole, or removed with null', () => {
    const batched: StoredWebhooks = { ...current, webhooks: [{ url: 'https://a.test/', headers: {}, batch: { maxEvents: 50, maxWaitMs: 0 } }, { url: 'https://b.test/', headers: {} }] };
    const merged = mergeWebhooksPatch(true, batched, { webhooks: [{ from: 0, headers: { 'X-New': 'n' } }, { from: 1, batch: { maxEvents: 3 } }] });
    expect(merged.body.webhooks).to.deep.equal([
      { url: 'https://a.test/', headers: { 'X-New': 'n' }, batch: { maxEvents: 50, maxWaitMs: 0 } },
      { url: 'https://b.test/', headers: {}, batch: { maxEvents: 3 } },
    ]);
    const removed = mergeWebhooksPatch(true, batched, { webhooks: [{ from: 0, batch: null }] });
    expect(removed.body.webhooks).to.deep.equal([{ url: 'https://a.test/', headers: {} }]);
  });

  it('replaces or removes the secret when named; then the rotated ones do not stay', () => {
    expect(mergeWebhooksPatch(true, current, { sharedSecret: 'next' })).to.deep.include({ sameSecret: false });
    expect(mergeWebhooksPatch(true, current, { sharedSecret: 'next' }).body.sharedSecret).to.equal('next');
    const removed = mergeWebhooksPatch(true, current, { sharedSecret: null });
    expect(removed.sameSecret).to.equal(false);
    expect(removed.body).not.to.have.property('sharedSecret');
  });

  it('refuses an index that is no URL, and an unknown field, naming it', () => {
    const refused = (patch: Record<string, unknown>, field: string) => {
      expect(() => mergeWebhooksPatch(true, current, patch)).to.throw(ValidationError).with.property('field', field);
    };
    refused({ webhooks: [{ from: 2 }] }, 'webhooks[0].from');
    refused({ webhooks: [{ url: 'https://c.test/' }, { from: '0' }] }, 'webhooks[1].from');
    refused({ webhooks: [{ from: 0, headers: ['X: y'] }] }, 'webhooks[0].headers');
    refused({ webhooks: [{ from: 0, colour: 'red' }] }, 'webhooks[0].colour');
    refused({ colour: 'red' }, 'colour');
  });
});
