import { FILE_HEADER_BYTES, fileHeader } from './format';
import { errno, type SpoolFs } from './fs';

/**
 * One segment file held open by its owner, with what the owner knows of it: where the next
 * record goes, how many message records are still to deliver, and the acks not written yet.
 * Writes are positional, at `size`, so a write that failed half-way can be cut off again.
 */
export class Segment {
  /** Bytes of the file the spool accounts for: the header and every record written. */
  size: number;
  /** Message records written and not acked. */
  live: number;
  /** Offsets of message records delivered since the last write of acks. */
  acks: number[] = [];
  /** A write failed and could not be undone: nothing more is appended but acks. */
  broken = false;

  private constructor(
    private readonly fs: SpoolFs,
    readonly path: string,
    private fd: number | undefined,
    size: number,
    live: number,
    /** Taken over from a process that is gone: read, acked, deleted, never appended to with messages. */
    readonly adopted: boolean,
  ) {
    this.size = size;
    this.live = live;
  }

  /** Creates a new segment file (exclusively) with its header. */
  static create(fs: SpoolFs, path: string, sync: boolean): Segment {
    const fd = fs.openSync(path, 'wx');
    try {
      writeAll(fs, fd, fileHeader(), 0);
      if (sync) fs.fdatasyncSync(fd);
    } catch (error) {
      fs.closeSync(fd);
      try {
        fs.unlinkSync(path);
      } catch {
        // what could not be written may not be removable either; a header-less file is cleaned up at recovery
      }
      throw error;
    }
    return new Segment(fs, path, fd, FILE_HEADER_BYTES, 0, false);
  }

  /**
   * A segment that could not be created (a full disk at the start): marked broken, so that the
   * first write of messages starts a real one in its place.
   */
  static placeholder(fs: SpoolFs, path: string): Segment {
    const segment = new Segment(fs, path, undefined, 0, 0, false);
    segment.broken = true;
    return segment;
  }

  /** A file taken over, `size` bytes long, holding `live` messages to deliver. Opened when first written to. */
  static adopt(fs: SpoolFs, path: string, size: number, live: number): Segment {
    return new Segment(fs, path, undefined, size, live, true);
  }

  /** Appends `bytes` at the end; on failure, cuts the file back to where it was and rethrows. */
  append(bytes: Uint8Array, sync: boolean): void {
    const fd = this.open();
    try {
      writeAll(this.fs, fd, bytes, this.size);
      if (sync) this.fs.fdatasyncSync(fd);
    } catch (error) {
      try {
        this.fs.ftruncateSync(fd, this.size);
      } catch {
        // A partial record stays behind; a reader skips it as damage. Write no more messages here.
        this.broken = true;
      }
      throw error;
    }
    this.size += bytes.length;
  }

  /** Empties the file back to its header (every record in it was delivered). */
  truncate(): void {
    this.fs.ftruncateSync(this.open(), FILE_HEADER_BYTES);
    this.size = FILE_HEADER_BYTES;
    this.acks = [];
  }

  /** Closes and deletes the file. */
  remove(): void {
    this.close();
    try {
      this.fs.unlinkSync(this.path);
    } catch (error) {
      if (errno(error) !== 'ENOENT') throw error;
    }
  }

  close(): void {
    if (this.fd === undefined) return;
    const fd = this.fd;
    this.fd = undefined;
    try {
      this.fs.closeSync(fd);
    } catch {
      // closing cannot lose data that was written
    }
  }

  private open(): number {
    this.fd ??= this.fs.openSync(this.path, 'r+');
    return this.fd;
  }
}

/** `writeSync` until every byte is written (it may write fewer than asked). */
function writeAll(fs: SpoolFs, fd: number, bytes: Uint8Array, position: number): void {
  for (let done = 0; done < bytes.length;) {
    const written = fs.writeSync(fd, bytes, done, bytes.length - done, position + done);
    if (written <= 0) throw Object.assign(new Error('write made no progress'), { code: 'EIO' });
    done += written;
  }
}
