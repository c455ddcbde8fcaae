/**
 * Who owns which spool files, and when an owner is gone.
 *
 * Each client writes under an id of its own: `<id>.lock` (created exclusively, holding the
 * process id, the host name and, on Linux, the process's start time) and `<id>-<seq>.seg`.
 * A lock does not need the kernel to release it: an owner is gone when its process no longer
 * runs (signal 0 answers ESRCH), or runs with another start time (the id was reused), or when
 * its process id is this process's own (a restarted container gets the same id). A lock from
 * another host cannot be checked that way; it is gone once its owner stopped touching it (a
 * heartbeat every scan) for `staleAfter`. Files are taken over by renaming each segment to the
 * taker's id: a rename either moves the file or fails with ENOENT, so exactly one process wins.
 */
import { errno, readBytes, type HostInfo, type SpoolFs } from './fs';

/** What a lock file holds. */
export interface LockInfo {
  readonly format: number;
  readonly pid: number;
  readonly host: string;
  readonly start: string | null;
}

const ID = /^[0-9a-f]{12}$/;
const LOCK = /^([0-9a-f]{12})\.lock$/;
const SEGMENT = /^([0-9a-f]{12})-(\d{6,})\.seg$/;

export function lockName(id: string): string {
  return `${id}.lock`;
}

export function segmentName(id: string, seq: number): string {
  return `${id}-${String(seq).padStart(6, '0')}.seg`;
}

/** The spool files of a directory listing, by owner id; other files are not the spool's and are left alone. */
export function spoolFiles(names: readonly string[]): Map<string, { lock: boolean; segments: { name: string; seq: number }[] }> {
  const owners = new Map<string, { lock: boolean; segments: { name: string; seq: number }[] }>();
  const of = (id: string) => {
    let owner = owners.get(id);
    if (!owner) owners.set(id, (owner = { lock: false, segments: [] }));
    return owner;
  };
  for (const name of names) {
    const lock = LOCK.exec(name);
    if (lock) {
      of(lock[1]!).lock = true;
      continue;
    }
    const segment = SEGMENT.exec(name);
    if (segment) of(segment[1]!).segments.push({ name, seq: Number(segment[2]) });
  }
  for (const owner of owners.values()) owner.segments.sort((a, b) => a.seq - b.seq);
  return owners;
}

export function isOwnerId(id: string): boolean {
  return ID.test(id);
}

/** A new random owner id (12 hex digits). */
export function newOwnerId(): string {
  const bytes = new Uint8Array(6);
  globalThis.crypto.getRandomValues(bytes);
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

/** This process as a lock file shows it. */
export function identity(host: HostInfo): LockInfo {
  return { format: 1, pid: host.pid, host: host.hostname, start: host.startOf(host.pid) ?? null };
}

/**
 * Creates `path` exclusively with the owner's identity; throws EEXIST when it is there. A lock
 * created but not written (a full disk) is removed again: an empty lock would hide files.
 */
export function createLock(fs: SpoolFs, path: string, info: LockInfo): void {
  try {
    fs.writeFileSync(path, `${JSON.stringify(info)}\n`, { flag: 'wx' });
  } catch (error) {
    if (errno(error) !== 'EEXIST') {
      try {
        fs.unlinkSync(path);
      } catch {
        // not created at all
      }
    }
    throw error;
  }
}

/** What `readLock` found: the content (undefined when empty or not a lock), its age, and whether it held something that is not a lock. */
export interface LockFile {
  readonly info: LockInfo | undefined;
  readonly mtimeMs: number;
  /** Not empty, yet not a lock: no client writes that, so nothing but its age could ever clear it. */
  readonly garbage: boolean;
}

/** The lock at `path`; undefined when there is no file. */
export function readLock(fs: SpoolFs, path: string): LockFile | undefined {
  let mtimeMs: number;
  let text: string;
  try {
    mtimeMs = fs.statSync(path).mtimeMs;
    text = readBytes(fs, path).toString('utf8');
  } catch (error) {
    if (errno(error) === 'ENOENT') return undefined;
    throw error;
  }
  try {
    const info = JSON.parse(text) as Partial<LockInfo> | null;
    const valid =
      typeof info === 'object' && info !== null && Number.isInteger(info.pid) && typeof info.host === 'string' &&
      (info.start === null || typeof info.start === 'string');
    return { info: valid ? (info as LockInfo) : undefined, mtimeMs, garbage: !valid };
  } catch {
    // Empty: a kill (or a failed write) between creating and writing it; its owner wrote no segment yet.
    return { info: undefined, mtimeMs, garbage: text.length > 0 };
  }
}

export interface Judge {
  readonly host: HostInfo;
  readonly now: number;
  /** How long a lock that cannot be checked (another host, unreadable) lives without its heartbeat, in ms. */
  readonly staleAfter: number;
}

const REGISTRY = Symbol.for('eventrelay.spoolOwners');

/**
 * The owner ids of the clients of this process with an open spool, shared by every copy of
 * eventrelay loaded in it (ESM and CommonJS builds, two versions): two clients of one process
 * may share a directory, and neither takes over the other's files.
 */
export function ownersInThisProcess(): Set<string> {
  const scope = globalThis as unknown as Record<symbol, Set<string> | undefined>;
  return (scope[REGISTRY] ??= new Set<string>());
}

/** Whether the owner `id` of a lock is gone, so that its files may be taken over. */
export function ownerGone(id: string, lock: { info: LockInfo | undefined; mtimeMs: number }, judge: Judge): boolean {
  if (ownersInThisProcess().has(id)) return false;
  const { info } = lock;
  const stale = judge.now - lock.mtimeMs > judge.staleAfter;
  // Unreadable (a kill between creating and writing it), or another machine's: only its age tells.
  if (info === undefined || info.host !== judge.host.hostname) return stale;
  // This process's id, but no client of this process: the id of a process that ended (a restarted container).
  if (info.pid === judge.host.pid) return true;
  if (!judge.host.isRunning(info.pid)) return true;
  if (info.start === null) return false;
  const start = judge.host.startOf(info.pid);
  return start !== undefined && start !== info.start;
}
