/**
 * The spool's file format, pure: bytes in, bytes or records out, no file I/O.
 *
 * A segment file is an 8-byte header (`ERSP`, the format version as u16 little-endian, two
 * reserved bytes) followed by records appended one after the other:
 *
 *   u16 mark 0xE5D1 | u8 kind | u8 flags (0) | u32 payload length | payload | u32 CRC-32 of all that precedes it
 *
 * A message record's payload is the time the call was accepted (f64, ms since the epoch) and the
 * message's JSON, the very bytes that go in a batch body. An ack record's payload is a list of u32
 * offsets of message records of the same file that were delivered. The trailing checksum makes a
 * record cut short by a kill or a full disk (torn) and one damaged on disk (corrupt) detectable;
 * the mark lets a reader find the next good record after a damaged one.
 */

export const FORMAT_VERSION = 1;
export const FILE_HEADER_BYTES = 8;
/** Mark, kind, flags and length before the payload, checksum after it. */
export const RECORD_OVERHEAD = 12;
/** The accepted-at time in front of a message record's JSON. */
const TIME_BYTES = 8;
const MAGIC = 0x50535245; // "ERSP" read as u32 little-endian
const MARK = 0xe5d1;
const KIND_MESSAGE = 1;
const KIND_ACK = 2;
/** Larger payloads are never written (a message is at most 32 KB; acks are split), so a larger length is damage. */
export const MAX_PAYLOAD_BYTES = 1 << 20;
const MAX_ACKS_PER_RECORD = MAX_PAYLOAD_BYTES / 4;

/** CRC-32 (IEEE) of the bytes: `zlib.crc32` where Node has it, else `crc32` below. */
export type Checksum = (bytes: Uint8Array) => number;

let table: Int32Array | undefined;

/** CRC-32 (IEEE 802.3), the same as zlib's; table made on first use, so loading this file costs nothing. */
export const crc32: Checksum = (bytes) => {
  table ??= makeTable();
  let crc = ~0;
  for (let i = 0; i < bytes.length; i++) crc = table[(crc ^ bytes[i]!) & 0xff]! ^ (crc >>> 8);
  return ~crc >>> 0;
};

function makeTable(): Int32Array {
  const t = new Int32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c;
  }
  return t;
}

/** The header of a new segment file. */
export function fileHeader(version = FORMAT_VERSION): Buffer {
  const header = Buffer.alloc(FILE_HEADER_BYTES);
  header.writeUInt32LE(MAGIC, 0);
  header.writeUInt16LE(version, 4);
  return header;
}

/**
 * What the first bytes of a file say: one of ours (`ok`), one written by a newer release that this
 * one must not touch (`newer`), a header cut short by a kill right after the file was created
 * (`short`: it holds no record), or not a spool file at all (`foreign`).
 */
export type HeaderCheck =
  | { readonly kind: 'ok' }
  | { readonly kind: 'newer'; readonly version: number }
  | { readonly kind: 'short' }
  | { readonly kind: 'foreign' };

export function checkHeader(bytes: Uint8Array): HeaderCheck {
  const whole = fileHeader();
  if (bytes.length < FILE_HEADER_BYTES) {
    for (let i = 0; i < Math.min(bytes.length, 4); i++) if (bytes[i] !== whole[i]) return { kind: 'foreign' };
    return { kind: 'short' };
  }
  const view = Buffer.from(bytes.buffer, bytes.byteOffset, FILE_HEADER_BYTES);
  if (view.readUInt32LE(0) !== MAGIC) return { kind: 'foreign' };
  const version = view.readUInt16LE(4);
  if (version > FORMAT_VERSION) return { kind: 'newer', version };
  if (version < 1) return { kind: 'foreign' };
  return { kind: 'ok' };
}

/** Bytes a message record of `jsonBytes` bytes of JSON takes in the file. */
export function messageRecordBytes(jsonBytes: number): number {
  return RECORD_OVERHEAD + TIME_BYTES + jsonBytes;
}

/** One message to encode: its JSON, that JSON's UTF-8 length, and when it was accepted. */
export interface MessageEntry {
  readonly json: string;
  readonly bytes: number;
  readonly time: number;
}

/**
 * Encodes messages as consecutive records in one buffer of `total` bytes (the sum of their
 * `messageRecordBytes`), so that all the calls of a turn go to disk in one write.
 */
export function encodeMessages(entries: readonly MessageEntry[], total: number, checksum: Checksum): Buffer {
  const buffer = Buffer.allocUnsafe(total);
  let at = 0;
  for (const entry of entries) {
    const length = TIME_BYTES + entry.bytes;
    buffer.writeUInt16LE(MARK, at);
    buffer[at + 2] = KIND_MESSAGE;
    buffer[at + 3] = 0;
    buffer.writeUInt32LE(length, at + 4);
    buffer.writeDoubleLE(entry.time, at + 8);
    // As many bytes as characters: ASCII only (JSON of ASCII data), which latin1 copies byte for byte, faster.
    const written = buffer.write(entry.json, at + 16, entry.bytes, entry.bytes === entry.json.length ? 'latin1' : 'utf8');
    if (written !== entry.bytes) throw new RangeError(`A message said to be ${entry.bytes} bytes encoded to ${written}`);
    const end = at + 8 + length;
    buffer.writeUInt32LE(checksum(buffer.subarray(at, end)), end);
    at = end + 4;
  }
  if (at !== total) throw new RangeError(`Encoded ${at} bytes of records where ${total} were expected`);
  return buffer;
}

/** Ack records naming the offsets of delivered message records (several when the list is long). */
export function encodeAcks(offsets: readonly number[], checksum: Checksum): Buffer {
  const records = Math.max(1, Math.ceil(offsets.length / MAX_ACKS_PER_RECORD));
  const buffer = Buffer.allocUnsafe(offsets.length * 4 + records * RECORD_OVERHEAD);
  let at = 0;
  for (let r = 0; r < records; r++) {
    const part = offsets.slice(r * MAX_ACKS_PER_RECORD, (r + 1) * MAX_ACKS_PER_RECORD);
    buffer.writeUInt16LE(MARK, at);
    buffer[at + 2] = KIND_ACK;
    buffer[at + 3] = 0;
    buffer.writeUInt32LE(part.length * 4, at + 4);
    let p = at + 8;
    for (const offset of part) {
      buffer.writeUInt32LE(offset, p);
      p += 4;
    }
    buffer.writeUInt32LE(checksum(buffer.subarray(at, p)), p);
    at = p + 4;
  }
  return buffer;
}

/** A message record found in a file and not acked. */
export interface ScannedMessage {
  readonly offset: number;
  /** When the call was accepted, ms since the epoch. */
  readonly time: number;
  /** Its JSON; empty when the scan was asked not to decode. */
  readonly json: string;
  readonly bytes: number;
}

/** Bytes of a file that hold no readable record: `torn` runs to the end of the file (a write cut short), `corrupt` is followed by good records. */
export interface Damage {
  readonly offset: number;
  readonly bytes: number;
  readonly kind: 'torn' | 'corrupt';
}

export interface ScanResult {
  /** Message records not acked, in file order. */
  readonly messages: ScannedMessage[];
  readonly damage: Damage[];
  /** Where the last good record ends: what is after it is torn. */
  readonly end: number;
}

/**
 * Reads every record of a segment file (whose header was checked). Damaged bytes are skipped
 * up to the next record whose mark, length and checksum hold, and listed in `damage`.
 * `decode: false` leaves `json` empty, for counting.
 */
export function scanRecords(file: Buffer, checksum: Checksum, decode = true): ScanResult {
  const found = new Map<number, ScannedMessage>();
  const damage: Damage[] = [];
  let at = FILE_HEADER_BYTES;
  let end = at;
  while (at < file.length) {
    const length = recordAt(file, at, checksum);
    if (length < 0) {
      const next = nextRecord(file, at + 1, checksum);
      if (next < 0) {
        damage.push({ offset: at, bytes: file.length - at, kind: 'torn' });
        break;
      }
      damage.push({ offset: at, bytes: next - at, kind: 'corrupt' });
      at = next;
      continue;
    }
    const payload = at + 8;
    if (file[at + 2] === KIND_MESSAGE) {
      const bytes = length - TIME_BYTES;
      const json = decode ? file.toString('utf8', payload + TIME_BYTES, payload + length) : '';
      found.set(at, { offset: at, time: file.readDoubleLE(payload), json, bytes });
    } else {
      for (let p = payload; p < payload + length; p += 4) found.delete(file.readUInt32LE(p));
    }
    at = payload + length + 4;
    end = at;
  }
  return { messages: [...found.values()], damage, end };
}

/** The payload length of a sound record at `at`, or -1. */
function recordAt(file: Buffer, at: number, checksum: Checksum): number {
  if (file.length - at < RECORD_OVERHEAD) return -1;
  if (file.readUInt16LE(at) !== MARK || file[at + 3] !== 0) return -1;
  const kind = file[at + 2];
  const length = file.readUInt32LE(at + 4);
  if (length > MAX_PAYLOAD_BYTES || at + RECORD_OVERHEAD + length > file.length) return -1;
  if (kind === KIND_MESSAGE ? length < TIME_BYTES : kind !== KIND_ACK || length % 4 !== 0) return -1;
  const end = at + 8 + length;
  return checksum(file.subarray(at, end)) === file.readUInt32LE(end) ? length : -1;
}

/** The offset of the next sound record from `from` on, or -1. */
function nextRecord(file: Buffer, from: number, checksum: Checksum): number {
  const mark = Buffer.from([MARK & 0xff, MARK >>> 8]);
  for (let at = file.indexOf(mark, from); at >= 0; at = file.indexOf(mark, at + 1)) {
    if (recordAt(file, at, checksum) >= 0) return at;
  }
  return -1;
}
