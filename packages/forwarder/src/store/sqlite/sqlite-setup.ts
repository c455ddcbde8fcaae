import type BetterSqlite3 from 'better-sqlite3';
import { toKeyRecord, toSourceRecord } from '../sql-rows';
import type { KeyRow, SourceRow } from '../sql-rows';
import type { SetupOp, SetupSnapshot, SetupStore, SetupWriteResult } from '../contract';
import { SETUP } from './sql';

/** A failed step: the transaction is rolled back and the reason returned. */
class StepFailed extends Error {
  constructor(readonly result: Extract<SetupWriteResult, { ok: false }>) {
    super(result.reason);
  }
}

/**
 * The runtime setup in the SQLite database (tables `sources`, `source_keys`, `setup_revision`).
 * The database is opened by one process only (exclusive locking), so no other process can
 * change it: the forwarder applies its own writes at once and needs no polling.
 */
export class SqliteSetup implements SetupStore {
  readonly shared = false;
  private readonly writeTx: BetterSqlite3.Transaction<(ops: readonly SetupOp[]) => SetupWriteResult>;
  private readonly statements;

  constructor(
    private readonly db: BetterSqlite3.Database,
    /** Throws when the store is closed; `write` true before a write (which sets its durability). */
    private readonly guard: (write: boolean) => void,
  ) {
    this.statements = {
      revision: db.prepare(SETUP.revision).pluck(),
      bump: db.prepare(SETUP.bump).pluck(),
      sources: db.prepare(SETUP.sources),
      source: db.prepare(SETUP.source),
      keys: db.prepare(SETUP.keys),
      insertSource: db.prepare(SETUP.insertSource),
      updateSource: db.prepare(SETUP.updateSource),
      deleteSource: db.prepare(SETUP.deleteSource),
      deleteKeys: db.prepare(SETUP.deleteKeys),
      deleteAudiences: db.prepare(SETUP.deleteAudiences),
      deleteMembers: db.prepare(SETUP.deleteMembers),
      failDeliveries: db.prepare(SETUP.failDeliveries),
      addFailed: db.prepare(SETUP.addFailed),
      keyByDigest: db.prepare(SETUP.keyByDigest),
      reviveKey: db.prepare(SETUP.reviveKey),
      insertKey: db.prepare(SETUP.insertKey),
      keysOf: db.prepare(SETUP.keysOf),
      expireKey: db.prepare(SETUP.expireKey),
      pruneKeys: db.prepare(SETUP.pruneKeys),
    };
    const s = this.statements;
    this.writeTx = db.transaction((ops: readonly SetupOp[]): SetupWriteResult => {
      let failedDeliveries = 0;
      for (const op of ops) {
        switch (op.op) {
          case 'create': {
            const r = op.source;
            const webhooks = r.webhooks === undefined ? null : JSON.stringify(r.webhooks);
            const settings = r.settings === undefined ? null : JSON.stringify(r.settings);
            const schema = r.schema === undefined ? null : JSON.stringify(r.schema);
            const inserted = s.insertSource.run(r.name, r.id, r.enabled ? 1 : 0, webhooks, r.applied ?? null, settings, r.createdAt, r.updatedAt, schema);
            if (inserted.changes === 0) throw new StepFailed({ ok: false, reason: 'exists', name: r.name });
            break;
          }
          case 'update': {
            const row = s.source.get(op.name) as SourceRow | undefined;
            if (row === undefined) throw new StepFailed({ ok: false, reason: 'missing', name: op.name });
            const enabled = op.enabled === undefined ? row.enabled : op.enabled ? 1 : 0;
            const webhooks = op.webhooks === undefined ? row.webhooks : op.webhooks === null ? null : JSON.stringify(op.webhooks);
            const applied = op.applied === undefined ? row.applied : op.applied;
            const settings = op.settings === undefined ? (row.settings ?? null) : op.settings === null ? null : JSON.stringify(op.settings);
            const schema = op.schema === undefined ? (row.schema ?? null) : op.schema === null ? null : JSON.stringify(op.schema);
            s.updateSource.run(enabled, webhooks, applied, settings, op.at, schema, op.name);
            break;
          }
          case 'delete': {
            if (s.deleteSource.run(op.name).changes === 0) throw new StepFailed({ ok: false, reason: 'missing', name: op.name });
            s.deleteKeys.run(op.name);
            s.deleteAudiences.run(op.name);
            s.deleteMembers.run(op.name);
            const failed = (s.failDeliveries.all(op.at, op.reason, op.name) as { batch: number }[]).filter((r) => r.batch === 0).length;
            if (failed > 0) s.addFailed.run(failed);
            failedDeliveries += failed;
            break;
          }
          case 'add-key': {
            const k = op.key;
            const same = s.keyByDigest.get(k.digest) as { id: string; source: string } | undefined;
            if (same !== undefined && same.source !== k.source) throw new StepFailed({ ok: false, reason: 'key-taken', name: same.source });
            if (same !== undefined) s.reviveKey.run(k.origin, same.id);
            else s.insertKey.run(k.id, k.source, k.digest, k.last4, k.origin, k.createdAt, k.expiresAt ?? null);
            break;
          }
          case 'expire-keys':
            for (const key of s.keysOf.all(op.source) as Array<{ id: string; origin: string; expires_at: number | null }>) {
              if (op.except.includes(key.id) || (op.origin !== undefined && key.origin !== op.origin)) continue;
              if (key.expires_at === null || key.expires_at > op.at) s.expireKey.run(op.at, key.id);
            }
            break;
        }
      }
      return { ok: true, revision: s.bump.get() as number, failedDeliveries };
    });
  }

  async read(): Promise<SetupSnapshot> {
    this.guard(false);
    const s = this.statements;
    // One read transaction: sources, keys and revision from the same moment.
    return this.db.transaction(() => ({
      revision: s.revision.get() as number,
      sources: (s.sources.all() as SourceRow[]).map(toSourceRecord),
      keys: (s.keys.all() as KeyRow[]).map(toKeyRecord),
    }))();
  }

  async revision(): Promise<number> {
    this.guard(false);
    return this.statements.revision.get() as number;
  }

  async write(ops: readonly SetupOp[]): Promise<SetupWriteResult> {
    this.guard(true);
    try {
      return this.writeTx.immediate(ops);
    } catch (error) {
      if (error instanceof StepFailed) return error.result;
      throw error;
    }
  }

  /** Forgets keys that ended before `before` (epoch ms); returns how many. */
  prune(before: number): number {
    return this.statements.pruneKeys.run(before).changes;
  }
}
