import { expect } from 'chai';
import nock from 'nock';
import { Analytics } from '../../../src/client/analytics';
import { HttpError } from '../../../src/errors';
import { useNock } from '../../../../../test/helpers/nock';

describe('Analytics against a Segment-compatible collector (nock)', () => {
  useNock();

  it('posts { batch, sentAt } to /v1/batch with Basic auth, and retries a 500 once', async () => {
    const bodies: { batch: { type: string; event: string }[]; sentAt: string }[] = [];
    const scope = nock('https://collector.example', { reqheaders: { authorization: `Basic ${Buffer.from('wk:').toString('base64')}` } })
      .post('/v1/batch')
      .reply(500)
      .post('/v1/batch', (body: (typeof bodies)[number]) => {
        bodies.push(body);
        return true;
      })
      .reply(200, {});
    const analytics = new Analytics({ writeKey: 'wk', host: 'https://collector.example', minRetryDelay: 1 });
    const results: unknown[] = [];
    analytics.track({ userId: 'u', event: 'Clicked' }, (error) => results.push(error));
    await analytics.closeAndFlush();
    expect(results).to.deep.equal([undefined]);
    expect(bodies[0]?.batch[0]).to.include({ type: 'track', event: 'Clicked' });
    expect(Date.parse(bodies[0]!.sentAt)).to.be.a('number').and.not.NaN;
    scope.done();
  });

  it('treats a 400 as final', async () => {
    const scope = nock('https://collector.example').post('/v1/batch').reply(400, { error: 'bad' });
    const analytics = new Analytics({ writeKey: 'wk', host: 'https://collector.example' });
    const results: unknown[] = [];
    analytics.identify({ userId: 'u' }, (error) => results.push(error));
    await analytics.closeAndFlush();
    expect(results[0]).to.be.instanceOf(HttpError);
    scope.done();
  });
});
