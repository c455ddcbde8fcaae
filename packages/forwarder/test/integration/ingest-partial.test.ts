import { describe, it } from 'mocha';
import { expect } from 'chai';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Analytics as SegmentAnalytics } from '@segment/analytics-node';
import { Analytics, NodeTransport, ValidationError } from '../../../eventrelay/src/index';
import type { EventRelayError, HttpRequest, HttpResponse, Transport } from '../../../eventrelay/src/index';
import { parseWebhookMessage } from '../../../eventrelay/src/webhooks';
import { basic, post, serveCli, useForwarderWithReceiver, waitFor } from './helpers';

/**
 * A transport that removes `event` from the batch's second message before sending: the
 * eventrelay client never sends what the forwarder refuses (one set of rules), so this stands
 * for a message spoiled on the way, to see the client read the forwarder's `rejected` list.
 */
class SpoilingTransport implements Transport {
  private readonly inner = new NodeTransport();

  send(request: HttpRequest): Promise<HttpResponse> {
    const body = JSON.parse(request.body as string) as { batch: Record<string, unknown>[] };
    delete body.batch[1]!.event;
    return this.inner.send({ ...request, body: JSON.stringify(body) });
  }

  close(): void {
    this.inner.close();
  }
}

/**
 * Three tracks in one batch through the SpoilingTransport: the first and last delivered, the middle
 * one's callback gets the forwarder's refusal (a ValidationError naming `event`).
 */
async function sendSpoiledBatch(endpoint: string, writeKey: string, prefix: string): Promise<void> {
  const analytics = new Analytics({ writeKey, endpoint, flushAt: 3, transport: new SpoilingTransport() });
  const results = await Promise.all(
    [`${prefix} Good 1`, `${prefix} Spoiled`, `${prefix} Good 2`].map(
      (event) => new Promise<EventRelayError | undefined>((resolve) => analytics.track({ userId: 'u1', event }, resolve)),
    ),
  );
  await analytics.closeAndFlush();
  expect(results[0]).to.equal(undefined);
  expect(results[2]).to.equal(undefined);
  expect(results[1]).to.be.instanceOf(ValidationError);
  expect((results[1] as ValidationError).field).to.equal('event');
}

describe('ingestion is not all or nothing (real forwarder and receiver on 127.0.0.1)', () => {
  const setup = useForwarderWithReceiver('backend', 'partial-key');
  const tracked = (event: string) => setup.receiver.delivered.filter((r) => r.json.event === event);

  it('delivers the good messages of an eventrelay batch and fails only the refused one\'s callback, with the reason', async () => {
    await sendSpoiledBatch(setup.url, 'partial-key', 'Partial');
    await waitFor(() => tracked('Partial Good 1').length === 1 && tracked('Partial Good 2').length === 1, 'the two good messages');
    // The operator sees the refusal in the counts.
    expect((await setup.forwarder.stats()).refused).to.equal(1);
    for (const request of setup.receiver.delivered) expect(() => parseWebhookMessage(request.body)).not.to.throw();
  });

  it('stores the valid calls of a @segment/analytics-node batch that also holds group({ userId }) without groupId', async () => {
    const segment = new SegmentAnalytics({ writeKey: 'partial-key', host: setup.url, flushAt: 3, maxRetries: 0 });
    const failures: unknown[] = [];
    segment.on('error', (error) => failures.push(error));
    segment.track({ userId: 'seg-user', event: 'Segment Before Group' });
    segment.group({ userId: 'seg-user' } as never);
    segment.track({ userId: 'seg-user', event: 'Segment After Group' });
    await segment.closeAndFlush();
    expect(failures).to.deep.equal([]);
    await waitFor(() => tracked('Segment Before Group').length === 1 && tracked('Segment After Group').length === 1, 'the valid Segment calls');
    expect(setup.receiver.delivered.some((r) => r.json.type === 'group' && r.json.userId === 'seg-user')).to.equal(false);
  });

  it('answers a message nested thousands of levels deep with a rejected entry, never 503 + Retry-After', async () => {
    // Written as text: JSON.stringify itself cannot go this deep.
    const deep = `${'{"a":'.repeat(4100)}1${'}'.repeat(4100)}`;
    const deeper = `${'['.repeat(200_000)}1${']'.repeat(200_000)}`;
    const answers: { rejected?: { index: number; code: string }[] }[] = [];
    for (const nested of [deep, deeper]) {
      const body = `{"batch":[{"type":"track","userId":"u","event":"Deep","properties":{"nested":${nested}}},{"type":"track","userId":"u","event":"Beside Deep"}]}`;
      const response = await post(`${setup.url}/v1/batch`, body, { Authorization: basic('partial-key') });
      expect(response.status, JSON.stringify(response.json).slice(0, 200)).to.equal(200);
      expect(response.headers.get('retry-after')).to.equal(null);
      answers.push(response.json as { rejected?: { index: number; code: string }[] });
    }
    // 4,100 levels: JSON copes, the message is stored. 200,000 levels: refused by index, its neighbour stored.
    expect(answers[0]!.rejected).to.equal(undefined);
    expect(answers[1]!.rejected).to.have.length(1);
    expect(answers[1]!.rejected![0]).to.include({ index: 0, code: 'invalid_message' });
    await waitFor(() => tracked('Beside Deep').length === 2, 'the messages beside the deep ones');
  });

  it('the same through an `eventrelay serve` process: the good messages reach the receiver, the spoiled one\'s callback gets the reason', async function () {
    this.timeout(30_000);
    if (!existsSync('packages/forwarder/dist/cli.js')) throw new Error('dist/cli.js is missing: run `npm run build` first (npm test does)');
    const configPath = join(setup.dataDir, 'partial.config.json');
    writeFileSync(
      configPath,
      JSON.stringify({ sources: [{ name: 'cli', writeKey: 'cli-key', destinations: { Webhooks: { webhooks: [{ url: `${setup.receiver.url}/cli` }] } } }] }),
    );
    const served = await serveCli(['--config', configPath, '--data', join(setup.dataDir, 'cli-data')]);
    try {
      await sendSpoiledBatch(served.url, 'cli-key', 'Cli');
      await waitFor(() => tracked('Cli Good 1').length === 1 && tracked('Cli Good 2').length === 1, 'the two good messages');
      expect(tracked('Cli Spoiled')).to.have.length(0);
    } finally {
      expect(await served.stop()).to.equal(0);
    }
  });
});
