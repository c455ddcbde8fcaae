import { ConfigError } from '../../errors';
import { enumOption, integerOption, objectOption, stringOption } from '../../internal/options';
import { showValue } from '../../internal/values';

/** `none`: a write per event-loop turn (survives a killed process); `always`: and an fdatasync after it (survives a power cut). */
export type SpoolSync = 'none' | 'always';

/** What becomes of a call the spool cannot write: `'refuse'` it (the default), or keep it in `'memory'` only. */
export type SpoolWriteErrorMode = 'refuse' | 'memory';

/** The `spool` option of `Analytics`: keep accepted calls in files until they are delivered. */
export interface SpoolOptions {
  /** Directory of the spool files; created when missing. Processes of one machine may share it. Required. */
  readonly dir: string;
  /** Bytes of spool files this client may hold; past it, calls get `QueueFullError`. Default 104857600 (100 MB). */
  readonly maxBytes?: number;
  /** `'none'` (default) or `'always'`: fdatasync each write, for power cuts. */
  readonly sync?: SpoolSync;
  /**
   * A call whose write fails (a full, read-only or failing disk): `'refuse'` (default) fails it with
   * `SpoolError` `ERR_SPOOL_WRITE`, so that an accepted call is always on disk; `'memory'` sends it
   * from memory only, reported with `ERR_SPOOL_NOT_DURABLE`.
   */
  readonly onWriteError?: SpoolWriteErrorMode;
}

export interface ResolvedSpoolOptions {
  readonly dir: string;
  readonly maxBytes: number;
  readonly sync: SpoolSync;
  readonly onWriteError: SpoolWriteErrorMode;
}

export const SPOOL_DEFAULTS = {
  maxBytes: 104_857_600,
  sync: 'none',
  onWriteError: 'refuse',
} as const;

/** Smallest `maxBytes`: room for one message of the largest size (32 KB) with its framing. */
export const MIN_SPOOL_BYTES = 65_536;

const KNOWN = new Set(['dir', 'maxBytes', 'sync', 'onWriteError']);

/** Validates `spool`, filling defaults field by field; `undefined` (the default) means no spool. */
export function resolveSpoolOptions(value: unknown): ResolvedSpoolOptions | undefined {
  if (value === undefined) return undefined;
  const spool = objectOption('spool', value, 'an object such as { dir: "/var/lib/myapp/spool" }');
  for (const key of Object.keys(spool)) {
    if (!KNOWN.has(key) && spool[key] !== undefined) {
      throw new ConfigError(`Unknown option ${showValue(`spool.${key}`)}. Known spool options: dir, maxBytes, sync, onWriteError`, key.length <= 40 ? `spool.${key}` : 'spool');
    }
  }
  return {
    dir: stringOption('spool.dir', spool.dir, 'a directory for the spool files'),
    maxBytes: integerOption('spool.maxBytes', spool.maxBytes ?? SPOOL_DEFAULTS.maxBytes, MIN_SPOOL_BYTES),
    sync: enumOption('spool.sync', spool.sync ?? SPOOL_DEFAULTS.sync, ['none', 'always'] as const),
    onWriteError: enumOption('spool.onWriteError', spool.onWriteError ?? SPOOL_DEFAULTS.onWriteError, ['refuse', 'memory'] as const),
  };
}
