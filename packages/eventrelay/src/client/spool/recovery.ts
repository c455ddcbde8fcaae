/**
 * Taking over the files of owners that are gone: find them, claim each segment by renaming it
 * (exactly one process wins a rename), check and count what it holds. Refuses, untouched, a
 * file written by a newer format version and a file that is not a spool file.
 */
import { SpoolError } from '../../errors';
import { checkHeader, scanRecords, type Checksum } from './format';
import { errno, readBytes, type SpoolRuntime } from './fs';
import { lockName, ownerGone, ownersInThisProcess, readLock, spoolFiles } from './owner';

export interface Claimed {
  /** The segment's new path, under the taker's id. */
  readonly path: string;
  /** Bytes of good records (a torn tail was cut off). */
  readonly size: number;
  readonly messages: number;
  /** When its oldest message was accepted. */
  readonly oldest: number;
}

export interface TakeOverContext {
  readonly runtime: SpoolRuntime;
  readonly checksum: Checksum;
  readonly dir: string;
  /** This client's owner id: its own files are never taken. */
  readonly id: string;
  readonly now: number;
  readonly staleAfter: number;
  /** The path a claimed segment is renamed to. */
  nextPath(): string;
  report(error: SpoolError): void;
  /** Paths already refused once (newer version, not a spool file): not reported again. */
  readonly refused: Set<string>;
}

/** Claims every segment of every owner that is gone; returns the claimed ones that hold messages. */
export function takeOver(context: TakeOverContext): Claimed[] {
  const { fs, join } = context.runtime;
  const claimed: Claimed[] = [];
  const owners = spoolFiles(fs.readdirSync(context.dir));
  for (const [id, files] of owners) {
    if (id === context.id || ownersInThisProcess().has(id)) continue;
    const lockPath = join(context.dir, lockName(id));
    let lock: ReturnType<typeof readLock>;
    try {
      lock = readLock(fs, lockPath);
    } catch {
      continue;
    }
    if (lock?.garbage && !context.refused.has(lockPath)) {
      context.refused.add(lockPath);
      // The content is not quoted: a file that is not a lock may hold anything.
      context.report(
        new SpoolError(`The lock file ${lockPath} does not hold a spool lock; its owner counts as gone and its files are taken over now`, 'ERR_SPOOL_CORRUPT', {
          file: lockPath,
          offset: 0,
        }),
      );
    }
    // No lock and segments: the owner closed (it deletes its lock last) and left undelivered messages.
    if (lock !== undefined && !lock.garbage && !ownerGone(id, lock, { host: context.runtime.host, now: context.now, staleAfter: context.staleAfter })) continue;
    let left = 0;
    for (const segment of files.segments) {
      const outcome = claim(context, join(context.dir, segment.name));
      if (outcome === 'left') left++;
      else if (outcome !== undefined) claimed.push(outcome);
    }
    if (lock !== undefined && left === 0) {
      try {
        fs.unlinkSync(lockPath);
      } catch {
        // another process cleaned it up
      }
    }
  }
  return claimed;
}

/** Claims one segment: its new state, `undefined` when there was nothing to take, `left` when refused. */
function claim(context: TakeOverContext, path: string): Claimed | 'left' | undefined {
  const { fs } = context.runtime;
  let bytes: Buffer;
  try {
    bytes = readBytes(fs, path);
  } catch (error) {
    if (errno(error) === 'ENOENT') return undefined;
    if (context.refused.has(path)) return 'left';
    context.refused.add(path);
    context.report(new SpoolError(`Could not read the spool file ${path} (${errno(error) ?? 'error'}); it is left in place`, 'ERR_SPOOL_CORRUPT', { file: path, offset: 0, cause: error }));
    return 'left';
  }
  const header = checkHeader(bytes);
  if (header.kind === 'newer' || header.kind === 'foreign') {
    if (!context.refused.has(path)) {
      context.refused.add(path);
      context.report(
        header.kind === 'newer'
          ? new SpoolError(
            `The spool file ${path} was written in format version ${header.version} by a newer release of eventrelay; this one reads ` +
            'version 1. It is left untouched: run the newer release on this directory to send it.',
            'ERR_SPOOL_VERSION',
            { file: path, offset: 0 },
          )
          : new SpoolError(`The file ${path} is named like a spool file but is not one; it is left untouched`, 'ERR_SPOOL_CORRUPT', { file: path, offset: 0 }),
      );
    }
    return 'left';
  }
  const target = context.nextPath();
  try {
    fs.renameSync(path, target);
  } catch (error) {
    // ENOENT: another process claimed it first.
    if (errno(error) !== 'ENOENT') {
      context.report(new SpoolError(`Could not take over the spool file ${path} (${errno(error) ?? 'error'})`, 'ERR_SPOOL_WRITE', { file: path, cause: error }));
    }
    return undefined;
  }
  if (header.kind === 'short') {
    // Created, then killed before its header was whole: it holds no record.
    removeQuietly(context, target);
    return undefined;
  }
  const scan = scanRecords(bytes, context.checksum, false);
  for (const damage of scan.damage) {
    context.report(
      new SpoolError(
        `Skipped ${damage.bytes} ${damage.kind === 'torn' ? 'bytes of a record cut short' : 'damaged bytes'} at offset ${damage.offset} of the spool file ` +
        `${target} (taken over from ${path}); every other message in it is sent`,
        'ERR_SPOOL_CORRUPT',
        { file: target, offset: damage.offset },
      ),
    );
  }
  if (scan.messages.length === 0) {
    removeQuietly(context, target);
    return undefined;
  }
  let size = bytes.length;
  if (scan.end < size) {
    // Cut the torn tail, so that acks appended later follow the last good record.
    try {
      const fd = fs.openSync(target, 'r+');
      try {
        fs.ftruncateSync(fd, scan.end);
        size = scan.end;
      } finally {
        fs.closeSync(fd);
      }
    } catch {
      // acks go after the damage, and a reader skips the damage before them
    }
  }
  const oldest = scan.messages.reduce((min, m) => Math.min(min, m.time), Infinity);
  return { path: target, size, messages: scan.messages.length, oldest };
}

function removeQuietly(context: TakeOverContext, path: string): void {
  try {
    context.runtime.fs.unlinkSync(path);
  } catch {
    // left for the next scan
  }
}
