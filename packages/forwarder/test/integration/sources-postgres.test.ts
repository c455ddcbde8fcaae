import { describe, it } from 'mocha';
import { expect } from 'chai';
import pg from 'pg';
import { basic, post, useReceiver, useTwoOnPostgres, waitFor } from './helpers';
import { listenConnections } from '../../../../test/helpers/postgres';

/** What the forwarder promises: every instance applies a change within 2 s. */
const APPLIED_WITHIN = 2000;

describe('runtime setup shared by two forwarders on one PostgreSQL database', function () {
  this.timeout(30_000);
  const two = useTwoOnPostgres();
  const receiver = useReceiver();
  const startBoth = () => two.start({ adminToken: 't', delivery: { minRetryDelay: 20, maxRetryDelay: 50 } });

  const send = (url: string, key: string, messageId: string) =>
    post(`${url}/v1/batch`, { batch: [{ type: 'track', userId: 'u', event: 'E', messageId }] }, { Authorization: basic(key) });

  it('a source made on one instance is served by the other (LISTEN/NOTIFY), and so are its settings', async () => {
    const { a, b, urlA, urlB } = await startBoth();
    const name = `made-on-a-${Date.now()}`;
    const { writeKey } = await a.createSource(name);
    // The instance that made it serves it as soon as the call returns.
    expect((await send(urlA, writeKey, `a-${Date.now()}`)).status).to.equal(200);
    await waitFor(async () => (await send(urlB, writeKey, `n-${Date.now()}-${Math.random()}`)).status === 200, 'instance B to accept the new key', APPLIED_WITHIN);
    await a.setWebhooks(name, { webhooks: [{ url: `${receiver.url}/from-b` }] });
    await waitFor(() => b.sources.includes(name), 'B to know the source');
    await waitFor(async () => (await b.listSources()).some((s) => s.name === name && s.destinations.Webhooks !== null), 'B to see the settings');
    await waitFor(async () => {
      const id = `b-${Date.now()}-${Math.random()}`;
      await send(urlB, writeKey, id);
      return receiver.delivered.some((r) => r.path === '/from-b');
    }, 'a delivery routed by B with the settings A wrote', APPLIED_WITHIN + 3000);
  });

  it('applies changes by polling when the LISTEN connection is gone', async () => {
    const { a, urlB } = await startBoth();
    const admin = new pg.Client({ connectionString: two.db.url });
    await admin.connect();
    try {
      const listeners = () => listenConnections(admin);
      await waitFor(async () => (await listeners()).length === 2, 'both instances to LISTEN');
      // Cut every LISTEN connection, again and again, so that only polling can carry the change.
      let cutting = true;
      const cut = (async () => {
        while (cutting) {
          for (const { pid } of await listeners()) await admin.query('SELECT pg_terminate_backend($1)', [pid]);
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
      })();
      try {
        const { writeKey } = await a.createSource(`polled-${Date.now()}`);
        await waitFor(async () => (await send(urlB, writeKey, `p-${Date.now()}-${Math.random()}`)).status === 200, 'instance B to accept the new key by polling', APPLIED_WITHIN);
      } finally {
        cutting = false;
        await cut;
      }
      // The LISTEN connections come back.
      await waitFor(async () => (await listeners()).length === 2, 'both instances to LISTEN again', 15_000);
    } finally {
      await admin.end();
    }
  });
});
