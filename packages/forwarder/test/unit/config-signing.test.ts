import { expect } from 'chai';
import { parseConfig } from '../../src/config';
import { refused } from './config-refusal';

function config(webhooks: Record<string, unknown>): unknown {
  return { sources: [{ name: 'web', writeKey: 'wk', destinations: { Webhooks: { webhooks: [{ url: 'https://example.test/hook' }], ...webhooks } } }] };
}

describe('parseConfig: signing of the Webhooks destination', () => {
  const field = 'sources[0].destinations.Webhooks';

  it('defaults to x-signature and takes standard-webhooks or both with a secret, also a rotation list from the environment', () => {
    expect(parseConfig(config({}), {}).sources[0]!.webhooks!.signing).to.equal('x-signature');
    const both = parseConfig(config({ signing: 'both', sharedSecret: [{ env: 'NEW' }, 'old-secret'] }), { NEW: 'new-secret' });
    expect(both.sources[0]!.webhooks).to.deep.include({ signing: 'both', sharedSecret: ['new-secret', 'old-secret'] });
    expect(parseConfig(config({ signing: 'standard-webhooks', sharedSecret: 's' }), {}).sources[0]!.webhooks!.signing).to.equal('standard-webhooks');
  });

  it('refuses an unknown scheme, a scheme without a secret, and a whsec_ secret that is not base64, naming the field', () => {
    expect(refused(config({ signing: 'svix', sharedSecret: 's' })).field).to.equal(`${field}.signing`);
    expect(refused(config({ signing: 'both' })).field).to.equal(`${field}.sharedSecret`);
    const bad = refused(config({ signing: 'standard-webhooks', sharedSecret: { env: 'S' } }), { S: 'whsec_###' });
    expect(bad.field).to.equal(`${field}.sharedSecret`);
    expect(bad.message).to.match(/base64/).and.not.include('###');
    expect(refused(config({ signing: 'both', sharedSecret: ['ok', 'whsec_!'] })).field).to.equal(`${field}.sharedSecret[1]`);
  });
});
