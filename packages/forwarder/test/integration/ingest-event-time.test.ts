import { describe, it } from 'mocha';
import { expect } from 'chai';
import RudderAnalytics from '@rudderstack/rudder-sdk-node';
import { basic, post, useForwarderWithReceiver, waitFor } from './helpers';

describe('event time at ingestion (real forwarder and receiver on 127.0.0.1)', () => {
  const setup = useForwarderWithReceiver('rudder', 'time-key');
  const tracked = (event: string) => setup.receiver.delivered.filter((r) => r.json.event === event);

  it('keeps the event time of @rudderstack/rudder-sdk-node calls, which carry originalTimestamp and no timestamp', async () => {
    const rudder = new RudderAnalytics('time-key', { dataPlaneUrl: setup.url, flushAt: 1, retryCount: 0, logLevel: 'error' });
    const happened = new Date('2021-06-01T12:00:00.000Z');
    rudder.track({ userId: 'r1', event: 'Rudder Historical', originalTimestamp: happened } as never);
    await new Promise((resolve) => rudder.flush(resolve));
    await waitFor(() => tracked('Rudder Historical').length === 1, 'the Rudder call');
    const timestamp = Date.parse(tracked('Rudder Historical')[0]!.json.timestamp as string);
    // receivedAt - (sentAt - originalTimestamp): both clocks are this machine's, so the
    // correction only moves it by the time in transit, far less than a minute.
    expect(Math.abs(timestamp - happened.getTime())).to.be.below(60_000);
  });

  it('corrects originalTimestamp for a sender whose clock is off, using the batch sentAt', async () => {
    const skew = 3_600_000; // the sender's clock runs an hour ahead
    const now = Date.now();
    const body = {
      sentAt: new Date(now + skew).toISOString(),
      batch: [{ type: 'track', userId: 'r2', event: 'Skewed Clock', originalTimestamp: new Date(now + skew - 10_000).toISOString() }],
    };
    const response = await post(`${setup.url}/v1/batch`, body, { Authorization: basic('time-key') });
    expect(response.status).to.equal(200);
    await waitFor(() => tracked('Skewed Clock').length === 1, 'the skewed call');
    const timestamp = Date.parse(tracked('Skewed Clock')[0]!.json.timestamp as string);
    // Ten seconds before the forwarder received it, not an hour in the future.
    expect(timestamp).to.be.within(now - 10_000 - 60_000, now);
  });
});
