import { describe, it, before, after } from 'mocha';
import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import RudderAnalytics from '@rudderstack/rudder-sdk-node';
import { createForwarder } from '../../../src/forwarder/service';
import type { Forwarder } from '../../../src/forwarder/service';
import { basic, post, startReceiver, waitFor } from './helpers';
import type { Receiver } from './helpers';

describe('event time at ingestion (real forwarder and receiver on 127.0.0.1)', () => {
  let receiver: Receiver;
  let forwarder: Forwarder;
  let url: string;
  let dataDir: string;
  const tracked = (event: string) => receiver.delivered.filter((r) => r.json.event === event);

  before(async () => {
    receiver = await startReceiver();
    dataDir = mkdtempSync(join(tmpdir(), 'eventrelay-time-'));
    forwarder = createForwarder(
      { sources: [{ name: 'rudder', writeKey: 'time-key', destinations: { Webhooks: { webhooks: [{ url: `${receiver.url}/hook` }] } } }] },
      { dataDir },
    );
    ({ url } = await forwarder.listen({ port: 0 }));
  });

  after(async () => {
    await forwarder.close();
    await receiver.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('keeps the event time of @rudderstack/rudder-sdk-node calls, which carry originalTimestamp and no timestamp', async () => {
    const rudder = new RudderAnalytics('time-key', { dataPlaneUrl: url, flushAt: 1, retryCount: 0, logLevel: 'error' });
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
    const response = await post(`${url}/v1/batch`, body, { Authorization: basic('time-key') });
    expect(response.status).to.equal(200);
    await waitFor(() => tracked('Skewed Clock').length === 1, 'the skewed call');
    const timestamp = Date.parse(tracked('Skewed Clock')[0]!.json.timestamp as string);
    // Ten seconds before the forwarder received it, not an hour in the future.
    expect(timestamp).to.be.within(now - 10_000 - 60_000, now);
  });
});
