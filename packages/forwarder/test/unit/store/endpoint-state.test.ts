import { describe } from 'mocha';
import { SqliteStore } from '../../../src/store/sqlite/sqlite';
import { SqliteEndpointStore } from '../../../src/store/sqlite/sqlite-endpoints';
import { MemoryEndpointStore } from '../../../src/store/endpoint-state';
import { endpointContract } from './endpoint-contract';
import { useTempDirs } from '../../../../../test/helpers/temp-dir';

endpointContract('MemoryEndpointStore', async () => ({ endpoints: new MemoryEndpointStore(), close: async () => {} }));

describe('SqliteEndpointStore', () => {
  const tempDir = useTempDirs('eventrelay-endpoints-');
  let dir = '';
  let current: SqliteStore | undefined;
  endpointContract(
    'SqliteEndpointStore',
    async () => {
      dir = tempDir();
      const store = (current = new SqliteStore({ dataDir: dir }));
      return { endpoints: new SqliteEndpointStore(store.database), close: () => store.close() };
    },
    async () => {
      // A restart: the data directory is the forwarder's alone, so the first store closes first.
      await current!.close();
      const store = new SqliteStore({ dataDir: dir });
      return { endpoints: new SqliteEndpointStore(store.database), close: () => store.close() };
    },
  );
});
