import { describe, it } from 'mocha';
import { expect } from 'chai';
import { createHmac } from 'node:crypto';
import { signBody, signingKey, signStandard, standardSigningKey } from '../../packages/forwarder/src/delivery/signing';
import { sign } from '../../packages/eventrelay/src/webhooks/schemes/signature';
import { signStandardWebhook, verifyStandardWebhook } from '../../packages/eventrelay/src/webhooks/schemes/standard-webhooks';
import { standardSignatures, xSignature } from '../../packages/eventrelay/src/internal/hmac';

const body = Buffer.from('{"type":"track","event":"Caf\u00e9 \u2713"}');

describe('HMAC signatures (src/internal/hmac): one implementation for sender and receiver', () => {
  it('X-Signature: hex HMAC-SHA1 of the bytes, the same from the destination and from sign()', () => {
    const expected = createHmac('sha1', 'shared').update(body).digest('hex');
    expect(xSignature('shared', body)).to.equal(expected);
    expect(signBody(body, signingKey('shared'))).to.equal(expected);
    expect(sign(body, 'shared')).to.equal(expected);
  });

  it('Standard Webhooks: the destination signs what the receiver helper verifies, one v1 per key', () => {
    const key = standardSigningKey('whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', 'secret');
    const header = signStandard(body, 'msg_1', 1_700_000_000, [key, key]);
    expect(header.split(' ')).to.have.length(2);
    expect(header).to.equal(standardSignatures([key, key], 'msg_1', 1_700_000_000, body));
    const headers = signStandardWebhook(body, 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', { id: 'msg_1', timestamp: new Date(1_700_000_000_000) });
    expect(headers['webhook-signature']).to.equal(header.split(' ')[0]);
    expect(
      verifyStandardWebhook(body, { 'webhook-id': 'msg_1', 'webhook-timestamp': '1700000000', 'webhook-signature': header }, 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', {
        now: 1_700_000_000_000,
      }),
    ).to.equal(true);
  });
});
