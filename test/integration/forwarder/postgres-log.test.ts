import { describe, it, before, after } from 'mocha';
import { expect } from 'chai';
import pg from 'pg';
import { PostgresStore } from '../../../src/forwarder/store/postgres';
import { PostgresDeliveryLog } from '../../../src/forwarder/store/postgres-log';
import { createForwarder } from '../../../src/forwarder/service';
import type { Forwarder } from '../../../src/forwarder/service';
import { deliveryLogContract } from '../../unit/forwarder/store/delivery-log-contract';
import { usePostgres } from '../../helpers/postgres';
import { basic, post, startReceiver, waitFor } from './helpers';
import type { Receiver } from './helpers';

const ADMIN = 'pg-admin-token';
const auth = { Authorization: `Bearer ${ADMIN}` };

describe('PostgresDeliveryLog (real server)', function () {
  this.timeout(30_000);
  const db = usePostgres();
  const stores: PostgresStore[] = [];

  after(async () => {
    for (const store of stores) await store.close();
  });

  deliveryLogContract('PostgresDeliveryLog', async (keepDelivered) => {
    const store = await PostgresStore.open({ url: db.url, poolSize: 4 });
    stores.push(store);
    const log = new PostgresDeliveryLog(store.logConnections, { keepDelivered });
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    try {
      await client.query('TRUNCATE log_messages, log_attempts RESTART IDENTITY');
    } finally {
      await client.end();
    }
    return log;
  });

  describe('two forwarders on one database', () => {
    let receiver: Receiver;
    let a: Forwarder;
    let b: Forwarder;
    let urlA: string;
    let urlB: string;

    before(async () => {
      receiver = await startReceiver();
      const config = {
        adminToken: ADMIN,
        storage: { type: 'postgres' as const, url: db.url },
        delivery: { minRetryDelay: 10, maxRetryDelay: 40, retryWindow: 150 },
        sources: [{ name: 'web', writeKey: 'pg-key', destinations: { Webhooks: { webhooks: [{ url: `${receiver.url}/pg` }] } } }],
      };
      a = createForwarder(config);
      b = createForwarder(config);
      ({ url: urlA } = await a.listen({ port: 0 }));
      ({ url: urlB } = await b.listen({ port: 0 }));
    });

    after(async () => {
      await a?.close();
      await b?.close();
      await receiver?.close();
    });

    it('shows a call accepted by one instance in the other, and replays it from there', async () => {
      receiver.failFirst('/pg', 1000, 500);
      await post(`${urlA}/v1/track`, { userId: 'pg-user', event: 'Shared Log', messageId: 'pg-shared' }, { Authorization: basic('pg-key') });
      let row: any;
      await waitFor(async () => {
        const response = await fetch(`${urlB}/admin/messages?messageId=pg-shared`, { headers: auth });
        row = ((await response.json()) as any).items[0];
        return row?.status === 'failed';
      }, 'the failed delivery in the other instance');
      const detail = (await (await fetch(`${urlB}/admin/deliveries/${row.id}`, { headers: auth })).json()) as any;
      expect(detail.attemptLog.length).to.equal(detail.attempts).and.be.at.least(1);
      expect(JSON.parse(detail.body)).to.include({ event: 'Shared Log' });
      receiver.failFirst('/pg', 0);
      expect((await post(`${urlB}/admin/deliveries/${row.id}/replay`, {}, auth)).status).to.equal(202);
      await waitFor(() => receiver.delivered.some((r) => r.json.messageId === 'pg-shared'), 'the replayed delivery');
      await waitFor(async () => {
        const response = await fetch(`${urlA}/admin/deliveries/${row.id}`, { headers: auth });
        return ((await response.json()) as any).status === 'delivered';
      }, 'the log to show it delivered');
    });
  });
});
