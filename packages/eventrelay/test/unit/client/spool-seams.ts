import * as nodeFs from 'node:fs';
import { join } from 'node:path';
import { FILE_HEADER_BYTES, crc32, encodeMessages, fileHeader, messageRecordBytes } from '../../../src/client/spool/format';
import { nodeRuntime, type SpoolFs, type SpoolRuntime } from '../../../src/client/spool/fs';
import { lockName, segmentName } from '../../../src/client/spool/owner';

type Call = keyof SpoolFs;

interface Fault {
  readonly call: Call;
  readonly code: string;
  /** How many calls fail; default every one. */
  times: number;
  /** Only calls on paths this accepts (the fd's path for fd calls). */
  readonly where: (path: string) => boolean;
  /** For writeSync and writeFileSync: write this many bytes first, then fail. */
  readonly partial: number | undefined;
}

/**
 * The spool's fs seam over the real node:fs, failing chosen calls with an errno (ENOSPC, EACCES,
 * EIO), optionally after writing part of the bytes. Counts every call.
 */
export class FaultyFs implements SpoolFs {
  readonly calls = new Map<Call, number>();
  private readonly faults: Fault[] = [];
  private readonly paths = new Map<number, string>();

  fail(call: Call, code: string, options: { times?: number; where?: (path: string) => boolean; partial?: number } = {}): void {
    this.faults.push({ call, code, times: options.times ?? Infinity, where: options.where ?? (() => true), partial: options.partial });
  }

  heal(): void {
    this.faults.length = 0;
  }

  count(call: Call): number {
    return this.calls.get(call) ?? 0;
  }

  private check(call: Call, path: string): Fault | undefined {
    this.calls.set(call, this.count(call) + 1);
    const fault = this.faults.find((f) => f.call === call && f.times > 0 && f.where(path));
    if (!fault) return undefined;
    fault.times--;
    if (fault.partial === undefined) throw errnoError(fault.code, call, path);
    return fault;
  }

  mkdirSync(path: string, options: { recursive: true }): unknown {
    this.check('mkdirSync', path);
    return nodeFs.mkdirSync(path, options);
  }

  readdirSync(path: string): string[] {
    this.check('readdirSync', path);
    return nodeFs.readdirSync(path);
  }

  openSync(path: string, flags: string): number {
    this.check('openSync', path);
    const fd = nodeFs.openSync(path, flags);
    this.paths.set(fd, path);
    return fd;
  }

  closeSync(fd: number): void {
    this.check('closeSync', this.paths.get(fd) ?? '');
    this.paths.delete(fd);
    nodeFs.closeSync(fd);
  }

  writeSync(fd: number, buffer: Uint8Array, offset: number, length: number, position: number): number {
    const fault = this.check('writeSync', this.paths.get(fd) ?? '');
    if (fault?.partial !== undefined) {
      nodeFs.writeSync(fd, buffer, offset, Math.min(length, fault.partial), position);
      throw errnoError(fault.code, 'writeSync', this.paths.get(fd) ?? '');
    }
    return nodeFs.writeSync(fd, buffer, offset, length, position);
  }

  fdatasyncSync(fd: number): void {
    this.check('fdatasyncSync', this.paths.get(fd) ?? '');
    nodeFs.fdatasyncSync(fd);
  }

  fsyncSync(fd: number): void {
    this.check('fsyncSync', this.paths.get(fd) ?? '');
    nodeFs.fsyncSync(fd);
  }

  ftruncateSync(fd: number, length: number): void {
    this.check('ftruncateSync', this.paths.get(fd) ?? '');
    nodeFs.ftruncateSync(fd, length);
  }

  readFileSync(path: string): Buffer {
    this.check('readFileSync', path);
    return nodeFs.readFileSync(path);
  }

  writeFileSync(path: string, data: string, options: { flag: string }): void {
    const fault = this.check('writeFileSync', path);
    if (fault?.partial !== undefined) {
      nodeFs.writeFileSync(path, data.slice(0, fault.partial), options);
      throw errnoError(fault.code, 'writeFileSync', path);
    }
    nodeFs.writeFileSync(path, data, options);
  }

  renameSync(from: string, to: string): void {
    this.check('renameSync', from);
    nodeFs.renameSync(from, to);
  }

  unlinkSync(path: string): void {
    this.check('unlinkSync', path);
    nodeFs.unlinkSync(path);
  }

  statSync(path: string): { mtimeMs: number; size: number } {
    this.check('statSync', path);
    return nodeFs.statSync(path);
  }

  utimesSync(path: string, atime: Date, mtime: Date): void {
    this.check('utimesSync', path);
    nodeFs.utimesSync(path, atime, mtime);
  }
}

function errnoError(code: string, call: string, path: string): Error {
  return Object.assign(new Error(`${code}: ${call} '${path}' (injected)`), { code, syscall: call, path });
}

/** The real runtime with this fs. */
export function runtimeWith(fs: SpoolFs): SpoolRuntime {
  return { ...nodeRuntime()!, fs };
}

/** A process id that runs nowhere (above Linux's largest pid). */
export const DEAD_PID = 4_194_304 + 17;

/**
 * Files as a process that died would have left them: a lock naming a pid that is not running,
 * and one segment holding `jsons` (accepted at `time`). Returns the segment's path and offsets.
 */
export function deadOwner(dir: string, jsons: readonly string[], options: { id?: string; time?: number; seq?: number } = {}) {
  const id = options.id ?? 'dead00000000';
  nodeFs.mkdirSync(dir, { recursive: true });
  nodeFs.writeFileSync(join(dir, lockName(id)), JSON.stringify({ format: 1, pid: DEAD_PID, host: nodeRuntime()!.host.hostname, start: null }));
  const entries = jsons.map((json) => ({ json, bytes: Buffer.byteLength(json), time: options.time ?? Date.parse('2026-03-01T10:00:00.000Z') }));
  const total = entries.reduce((sum, e) => sum + messageRecordBytes(e.bytes), 0);
  const offsets: number[] = [];
  let at = FILE_HEADER_BYTES;
  for (const e of entries) {
    offsets.push(at);
    at += messageRecordBytes(e.bytes);
  }
  const path = join(dir, segmentName(id, options.seq ?? 0));
  nodeFs.writeFileSync(path, Buffer.concat([fileHeader(), encodeMessages(entries, total, crc32)]));
  return { id, path, offsets, lock: join(dir, lockName(id)) };
}
