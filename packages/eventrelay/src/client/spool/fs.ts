/**
 * The spool's one seam to the file system and the process table. The default is Node's own
 * `node:fs`, loaded with `process.getBuiltinModule` only when a client is created with `spool`,
 * so the client has no static `node:` import and still loads on runtimes without a file system.
 * Tests pass a wrapper that fails chosen calls (ENOSPC, EACCES, EIO).
 */
import type { Checksum } from './format';

/**
 * The synchronous `node:fs` calls the spool makes (`node:fs` itself satisfies it). Bytes read are
 * typed `Uint8Array`, not Node's `Buffer`, so that `eventrelay`'s declarations need no @types/node.
 */
export interface SpoolFs {
  mkdirSync(path: string, options: { recursive: true }): unknown;
  readdirSync(path: string): string[];
  openSync(path: string, flags: string): number;
  closeSync(fd: number): void;
  writeSync(fd: number, buffer: Uint8Array, offset: number, length: number, position: number): number;
  fdatasyncSync(fd: number): void;
  fsyncSync(fd: number): void;
  ftruncateSync(fd: number, length: number): void;
  readFileSync(path: string): Uint8Array;
  writeFileSync(path: string, data: string, options: { flag: string }): void;
  renameSync(from: string, to: string): void;
  unlinkSync(path: string): void;
  statSync(path: string): { readonly mtimeMs: number; readonly size: number };
  utimesSync(path: string, atime: Date, mtime: Date): void;
}

/** What the spool needs to know about processes on this machine, to tell a dead owner from a live one. */
export interface HostInfo {
  readonly pid: number;
  readonly hostname: string;
  /** Whether a process with this id exists (signal 0: it may belong to another user). */
  isRunning(pid: number): boolean;
  /** When the process started, as the kernel counts it (Linux: field 22 of /proc/<pid>/stat), or undefined where unknown. */
  startOf(pid: number): string | undefined;
}

/** Everything the spool takes from the runtime, in one place. */
export interface SpoolRuntime {
  readonly fs: SpoolFs;
  readonly host: HostInfo;
  readonly join: (dir: string, name: string) => string;
  readonly checksum?: Checksum;
}

type GetBuiltinModule = (id: string) => unknown;

function builtin<T>(id: string): T | undefined {
  const get = (globalThis as { process?: { getBuiltinModule?: GetBuiltinModule } }).process?.getBuiltinModule;
  return typeof get === 'function' ? (get(id) as T | undefined) : undefined;
}

/** A file's bytes as a Buffer, which the spool's format code reads them with (`node:fs` gives one already). */
export function readBytes(fs: SpoolFs, path: string): Buffer {
  const bytes = fs.readFileSync(path);
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** An error's `code` (`ENOENT`, `ENOSPC`, ...), when it has one. */
export function errno(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/** Node's file system and process table, or undefined on a runtime without them (Workers, Vercel Edge). */
export function nodeRuntime(): SpoolRuntime | undefined {
  const fs = builtin<SpoolFs>('node:fs');
  const os = builtin<{ hostname(): string }>('node:os');
  const path = builtin<{ join(...parts: string[]): string }>('node:path');
  const zlib = builtin<{ crc32?: (data: Uint8Array) => number }>('node:zlib');
  const proc = (globalThis as { process?: { pid?: number; kill?: (pid: number, signal: number) => void } }).process;
  if (!fs || !os || !path || typeof proc?.pid !== 'number' || typeof proc.kill !== 'function') return undefined;
  const kill = proc.kill.bind(proc);
  const host: HostInfo = {
    pid: proc.pid,
    hostname: os.hostname(),
    isRunning(pid) {
      try {
        kill(pid, 0);
        return true;
      } catch (error) {
        // EPERM: it exists but belongs to another user. Only "no such process" means gone.
        return errno(error) !== 'ESRCH';
      }
    },
    startOf(pid) {
      try {
        const stat = readBytes(fs, `/proc/${pid}/stat`).toString('latin1');
        // The command name (field 2) may hold spaces and parentheses: count fields after the last ')'.
        return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
      } catch {
        return undefined;
      }
    },
  };
  const crc32 = zlib?.crc32;
  return { fs, host, join: (dir, name) => path.join(dir, name), checksum: typeof crc32 === 'function' ? (bytes) => crc32(bytes) : undefined };
}
