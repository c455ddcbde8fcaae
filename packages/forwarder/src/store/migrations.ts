import { StoreError } from 'eventrelay/internal';

/**
 * Versioned schemas, the same shape for every store: an ordered list of steps, each applied
 * once and recorded in the table `schema_migrations (version, name, applied_at)`. A new column
 * or table is a new step at the end of the store's list; a step already released never changes
 * (data directories and databases out there have run it).
 */
export interface Migration<Step> {
  /** 1, 2, 3, ...: the position in the list. */
  readonly version: number;
  /** Short description, kept in the version table for operators. */
  readonly name: string;
  readonly up: Step;
}

/** Name of the version table, in every store. */
export const VERSION_TABLE = 'schema_migrations';

/** The steps after `current`, in order; refuses a schema newer than this package knows. */
export function stepsAfter<Step>(store: string, migrations: readonly Migration<Step>[], current: number): readonly Migration<Step>[] {
  migrations.forEach((m, i) => {
    if (m.version !== i + 1) throw new Error(`${store} migrations must be numbered 1, 2, 3, ... in order; step ${i} has version ${m.version}`);
  });
  const latest = migrations.length;
  if (current > latest) {
    throw new StoreError(
      `The ${store} schema is at version ${current}, newer than this eventrelay knows (${latest}): ` +
      'it was upgraded by a newer release. Run that release (or newer) against it.',
      'ERR_STORE_SCHEMA',
    );
  }
  return migrations.slice(current);
}
