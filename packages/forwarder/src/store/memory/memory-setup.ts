import type { SetupOp, SetupSnapshot, SetupStore, SetupWriteResult, SourceRecord, WriteKeyRecord } from '../contract';

/**
 * The runtime setup in process memory: for the memory store, and for a custom store that keeps
 * none. Nothing survives a restart; the config file's sources are applied again at start.
 */
export class MemorySetup implements SetupStore {
  readonly shared = false;
  private rev = 0;
  private sources = new Map<string, SourceRecord>();
  /** By id. */
  private keys = new Map<string, WriteKeyRecord>();

  /** `failSource` fails the pending deliveries of a deleted source (those in flight included) and returns how many. */
  constructor(private readonly failSource: (source: string, at: number, reason: string) => number = () => 0) {}

  async read(): Promise<SetupSnapshot> {
    return { revision: this.rev, sources: [...this.sources.values()], keys: [...this.keys.values()] };
  }

  async revision(): Promise<number> {
    return this.rev;
  }

  /** The ids of the sources it holds. */
  ids(): Set<string> {
    return new Set([...this.sources.values()].map((s) => s.id));
  }

  /** Whether the source `name` exists with `id` now. */
  holds(name: string, id: string): boolean {
    return this.sources.get(name)?.id === id;
  }

  async write(ops: readonly SetupOp[]): Promise<SetupWriteResult> {
    // Applied to copies, swapped in only when every step passed: all or nothing.
    const sources = new Map(this.sources);
    const keys = new Map(this.keys);
    const deleted: Array<{ name: string; at: number; reason: string }> = [];
    for (const op of ops) {
      switch (op.op) {
        case 'create':
          if (sources.has(op.source.name)) return { ok: false, reason: 'exists', name: op.source.name };
          sources.set(op.source.name, op.source);
          break;
        case 'update': {
          const current = sources.get(op.name);
          if (current === undefined) return { ok: false, reason: 'missing', name: op.name };
          const { schema: _schema, ...rest } = current;
          const schema = op.schema === undefined ? current.schema : (op.schema ?? undefined);
          sources.set(op.name, {
            ...rest,
            updatedAt: op.at,
            ...(op.enabled === undefined ? {} : { enabled: op.enabled }),
            ...(op.webhooks === undefined ? {} : { webhooks: op.webhooks ?? undefined }),
            ...(op.applied === undefined ? {} : { applied: op.applied ?? undefined }),
            ...(op.settings === undefined ? {} : { settings: op.settings ?? undefined }),
            // Absent, not undefined, without controls: the record reads as the SQL stores' do.
            ...(schema === undefined ? {} : { schema }),
          });
          break;
        }
        case 'delete':
          if (!sources.delete(op.name)) return { ok: false, reason: 'missing', name: op.name };
          for (const [id, key] of keys) if (key.source === op.name) keys.delete(id);
          deleted.push(op);
          break;
        case 'add-key': {
          const same = [...keys.values()].find((k) => k.digest === op.key.digest);
          if (same !== undefined && same.source !== op.key.source) return { ok: false, reason: 'key-taken', name: same.source };
          if (same !== undefined) keys.set(same.id, { ...same, expiresAt: undefined, origin: op.key.origin });
          else keys.set(op.key.id, op.key);
          break;
        }
        case 'expire-keys':
          for (const [id, key] of keys) {
            if (key.source !== op.source || op.except.includes(id) || (op.origin !== undefined && key.origin !== op.origin)) continue;
            if (key.expiresAt === undefined || key.expiresAt > op.at) keys.set(id, { ...key, expiresAt: op.at });
          }
          break;
      }
    }
    this.sources = sources;
    this.keys = keys;
    this.rev++;
    let failedDeliveries = 0;
    for (const d of deleted) failedDeliveries += this.failSource(d.name, d.at, d.reason);
    return { ok: true, revision: this.rev, failedDeliveries };
  }

  /** Forgets keys that ended before `before` (epoch ms). */
  prune(before: number): number {
    let removed = 0;
    for (const [id, key] of this.keys) {
      if (key.expiresAt !== undefined && key.expiresAt < before) {
        this.keys.delete(id);
        removed++;
      }
    }
    return removed;
  }
}
