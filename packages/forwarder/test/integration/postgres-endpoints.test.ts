import { describe, it } from 'mocha';
import { expect } from 'chai';
import { PostgresStore } from '../../src/store/postgres/postgres';
import { PostgresEndpointStore } from '../../src/store/postgres/postgres-endpoints';
import { endpointContract, failures, T0 } from '../unit/store/endpoint-contract';
import { usePostgres } from '../../../../test/helpers/postgres';
import type { EndpointStore } from '../../src/store/contract';

describe('PostgresEndpointStore (real server)', function () {
  this.timeout(30_000);
  const db = usePostgres();

  async function open(empty: boolean): Promise<{ endpoints: EndpointStore; close: () => Promise<void> }> {
    const store = await PostgresStore.open({ url: db.url, poolSize: 2 });
    if (empty) await store.logConnections.query('TRUNCATE endpoint_states');
    return { endpoints: new PostgresEndpointStore(store.logConnections), close: () => store.close() };
  }

  endpointContract('PostgresEndpointStore', () => open(true), () => open(false));

  it('disables a URL once when two instances report its failures at the same moment', async () => {
    const a = await open(true);
    const b = await open(false);
    try {
      const rule = { after: 24 * 3_600_000, minAttempts: 10 };
      await a.endpoints.report([failures(8, T0, T0 + 20 * 3_600_000)], rule);
      const results = await Promise.all(
        Array.from({ length: 6 }, (_, i) => (i % 2 === 0 ? a : b).endpoints.report([failures(1, T0 + (25 + i) * 3_600_000, T0 + (25 + i) * 3_600_000)], rule)),
      );
      expect(results.flatMap((r) => r.disabled)).to.have.length(1);
      const [state] = await b.endpoints.list();
      expect(state).to.deep.include({ failures: 14, failingSince: T0 });
      expect(state!.disabledAt).to.be.a('number');
      // Enabled by one instance, seen enabled by the other; a second enable changes nothing.
      const enabled = await Promise.all([a.endpoints.enable('web', 'k1', T0), b.endpoints.enable('web', 'k1', T0)]);
      expect(enabled.filter((e) => e !== undefined)).to.have.length(1);
      expect((await a.endpoints.list())[0]!.disabledAt).to.equal(undefined);
    } finally {
      await a.close();
      await b.close();
    }
  });
});
