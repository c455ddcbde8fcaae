import { describe, it } from 'mocha';
import { expect } from 'chai';
import Database from 'better-sqlite3';
import { MEMORY_LOG_LIMIT, MemoryDeliveryLog } from '../../../src/store/delivery-log';
import { SqliteDeliveryLog } from '../../../src/store/sqlite/sqlite-log';
import { attempt, call, deliveryLogContract, T0 } from './delivery-log-contract';

deliveryLogContract('MemoryDeliveryLog', (keepDelivered) => new MemoryDeliveryLog({ keepDelivered }));
deliveryLogContract('SqliteDeliveryLog', (keepDelivered) => new SqliteDeliveryLog(new Database(':memory:'), { keepDelivered }));

describe('MemoryDeliveryLog limit', () => {
  it('keeps the newest 100 000 calls by default', () => {
    expect(MEMORY_LOG_LIMIT).to.equal(100_000);
  });

  it('keeps the newest calls when it holds more than its limit', async () => {
    const log = new MemoryDeliveryLog({ keepDelivered: 0 }, 10);
    log.add(Array.from({ length: 25 }, (_, i) => call(`n${i}`)));
    const rows = await log.list({ limit: 100 });
    expect(rows.length).to.be.at.most(11).and.at.least(10);
    expect(rows[0]!.messageId).to.equal('n24');
    // A dropped call's late attempt is ignored, not an error.
    log.attempt(attempt('n0', 1, 'delivered', T0 + 1));
  });
});

describe('SqliteDeliveryLog durability', () => {
  it('commits with synchronous=NORMAL (no fsync of its own) and gives the queue its setting back', async () => {
    const db = new Database(':memory:');
    db.pragma('synchronous = FULL');
    const log = new SqliteDeliveryLog(db, { keepDelivered: 0 });
    const pragmas: string[] = [];
    const pragma = db.pragma.bind(db);
    db.pragma = ((source: string, options?: { simple?: boolean }) => {
      pragmas.push(source);
      return pragma(source, options);
    }) as typeof db.pragma;
    log.add([call('s1')]);
    expect((await log.list({ limit: 1 }))[0]!.messageId).to.equal('s1');
    expect(pragmas).to.deep.equal(['synchronous', 'synchronous = NORMAL', 'synchronous = 2']);
    expect(pragma('synchronous', { simple: true })).to.equal(2);
    await log.close();
  });
});
