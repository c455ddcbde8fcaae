import { describe, it } from 'mocha';
import { expect } from 'chai';
import Database from 'better-sqlite3';
import { MemoryDeliveryLog } from '../../../src/store/delivery-log';
import { SqliteDeliveryLog } from '../../../src/store/sqlite/sqlite-log';
import { call, T0 } from './delivery-log-contract';
import type { DeliveryLog } from '../../../src/store/contract';

const url = 'https://hooks.example.test/in';

async function retriedThenDelivered(log: DeliveryLog): Promise<(number | null)[]> {
  log.add([call('m1')]);
  log.attempt({ source: 'web', messageId: 'm1', attempt: 1, at: T0 + 10, outcome: 'retry', nextAttemptAt: T0 + 760, urls: [{ url, status: 503, error: 'HTTP', durationMs: 4 }] });
  log.attempt({ source: 'web', messageId: 'm1', attempt: 2, at: T0 + 770, outcome: 'delivered', urls: [{ url, status: 200, error: null, durationMs: 3 }] });
  const [line] = await log.list({ limit: 1 });
  const detail = await log.get(line!.id);
  return detail!.attemptLog.map((a) => a.nextAttemptAt);
}

describe('the delivery log: the next attempt time of each attempt', () => {
  for (const [name, make] of [
    ['MemoryDeliveryLog', () => new MemoryDeliveryLog({ keepDelivered: 0 })],
    ['SqliteDeliveryLog', () => new SqliteDeliveryLog(new Database(':memory:'), { keepDelivered: 0 })],
  ] as const) {
    it(`${name}: a retry keeps when the next attempt is due; the last attempt has none`, async () => {
      expect(await retriedThenDelivered(make())).to.deep.equal([T0 + 760, null]);
    });
  }

  it('SqliteDeliveryLog: a log made by an earlier release gains the column; its old attempts have no time', async () => {
    const db = new Database(':memory:');
    db.exec(`CREATE TABLE log_attempts (id INTEGER PRIMARY KEY, delivery_id INTEGER NOT NULL, series INTEGER NOT NULL, attempt INTEGER NOT NULL,
      at INTEGER NOT NULL, url TEXT NOT NULL, status INTEGER, error TEXT, duration_ms INTEGER NOT NULL, outcome TEXT NOT NULL)`);
    db.exec(`INSERT INTO log_attempts (delivery_id, series, attempt, at, url, status, error, duration_ms, outcome) VALUES (999, 1, 1, ${T0}, '${url}', 503, 'HTTP', 5, 'retry')`);
    const log = new SqliteDeliveryLog(db, { keepDelivered: 0 });
    expect((db.prepare('SELECT next_attempt_at FROM log_attempts').all() as { next_attempt_at: number | null }[]).map((r) => r.next_attempt_at)).to.deep.equal([null]);
    expect(await retriedThenDelivered(log)).to.deep.equal([T0 + 760, null]);
  });
});
