/**
 * QuickJS's own object serialization ("binary JSON": what `JS_WriteObject` writes, format version
 * 5 of the pinned 0.32.0 build), read here on the host. A transform's output comes out of its
 * realm as these bytes, which the engine writes in about a fifth of the time of its own
 * `JSON.stringify` (and a strict replacer on top); they are written out here, without making any
 * JavaScript object, as the UTF-8 JSON text `JSON.stringify` would make of the same value.
 *
 * Only the data JSON can carry is read: null, booleans, finite numbers, strings, arrays and plain
 * objects whose keys are not array indices. Anything else (`undefined`, NaN or Infinity, a Date, a
 * BigInt, a boxed primitive, a typed array, an object met twice, a key such as "0", whose place
 * JSON.stringify moves) makes `toJsonBytes` answer `undefined`, and the sandbox serializes that
 * output with its strict serializer instead, which names what is wrong or calls `toJSON` as
 * `JSON.stringify` does. What the engine refuses to write (a function, a symbol, a getter, a
 * Proxy, a Map) fails its write, with the same outcome.
 *
 * The layout: a version byte; the atoms (property names) as a LEB128 count and that many strings;
 * then the value, a tag byte and its data. A string is a LEB128 of its length shifted left once,
 * the low bit set for UTF-16 (little-endian code units, lone surrogates kept) and clear for
 * Latin-1 bytes. A property name is a LEB128 of an atom's index plus one, shifted left once, or of
 * an integer key shifted left once with the low bit set.
 */

const VERSION = 5;
const TAG = { null: 1, undefined: 2, false: 3, true: 4, int32: 5, float64: 6, string: 7, object: 8, array: 9 } as const;

/** Thrown inside the reader for anything left to the strict serializer. */
const UNSUPPORTED = new Error('not plain JSON data');

/** The JSON text being written, and its length: a buffer kept between calls, grown as needed. */
let out = Buffer.allocUnsafe(4096);
let outAt = 0;

/** `out`, with room for `bytes` more. */
function room(bytes: number): Buffer {
  if (outAt + bytes > out.length) {
    const next = Buffer.allocUnsafe(Math.max(out.length * 2, outAt + bytes));
    out.copy(next, 0, 0, outAt);
    out = next;
  }
  return out;
}

/** One byte of punctuation. */
function put(byte: number): void {
  room(1)[outAt++] = byte;
}

const EMPTY = Buffer.alloc(0);
let input: Buffer = EMPTY;
let offset = 0;
let end = 0;
/** Where each atom's string starts in `input`, its head included. */
let atomAt: number[] = [];
/** Characters of the strings and names read so far, against the output limit. */
let characters = 0;
let characterLimit = 0;

function byte(): number {
  if (offset >= end) throw UNSUPPORTED;
  return input[offset++]!;
}

function readLeb128(): number {
  let result = 0;
  for (let shift = 0; shift < 35; shift += 7) {
    const b = byte();
    result += (b & 0x7f) * 2 ** shift;
    if (b < 0x80) return result;
  }
  throw UNSUPPORTED;
}

const HEX = '0123456789abcdef';
/** The letters of JSON's short escapes (`\"`, `\\`, `\b`, `\t`, `\n`, `\f`, `\r`), by the unit they stand for. */
const SHORT_ESCAPES: Partial<Record<number, number>> = { 0x22: 0x22, 0x5c: 0x5c, 0x08: 0x62, 0x09: 0x74, 0x0a: 0x6e, 0x0c: 0x66, 0x0d: 0x72 };

/** `\uXXXX` for a unit JSON escapes that has no short form, lowercase as JSON.stringify writes it. */
function writeUnicodeEscape(bytes: Buffer, at: number, unit: number): number {
  bytes[at++] = 0x5c;
  bytes[at++] = 0x75;
  for (let shift = 12; shift >= 0; shift -= 4) bytes[at++] = HEX.charCodeAt((unit >>> shift) & 0xf);
  return at;
}

/** A unit below 0x20, a quote or a backslash, escaped as JSON.stringify escapes it. */
function writeEscape(bytes: Buffer, at: number, unit: number): number {
  const short = SHORT_ESCAPES[unit] ?? 0;
  if (short === 0) return writeUnicodeEscape(bytes, at, unit);
  bytes[at++] = 0x5c;
  bytes[at++] = short;
  return at;
}

/** The string at `offset` (its head first), written quoted and escaped as UTF-8 JSON text. */
function copyString(): void {
  const head = readLeb128();
  const wide = head % 2 === 1;
  const units = Math.floor(head / 2);
  const stop = offset + (wide ? units * 2 : units);
  if (stop > end) throw UNSUPPORTED;
  characters += units;
  if (characters > characterLimit) throw UNSUPPORTED;
  // At most 6 bytes a unit (an escape), and the quotes.
  const bytes = room(units * 6 + 2);
  let at = outAt;
  bytes[at++] = 0x22;
  const step = wide ? 2 : 1;
  for (let i = offset; i < stop; i += step) {
    const unit = wide ? input[i]! | (input[i + 1]! << 8) : input[i]!;
    if (unit < 0x80) {
      if (unit < 0x20 || unit === 0x22 || unit === 0x5c) at = writeEscape(bytes, at, unit);
      else bytes[at++] = unit;
    } else if (unit < 0x800) {
      bytes[at++] = 0xc0 | (unit >>> 6);
      bytes[at++] = 0x80 | (unit & 0x3f);
    } else if (unit < 0xd800 || unit > 0xdfff) {
      bytes[at++] = 0xe0 | (unit >>> 12);
      bytes[at++] = 0x80 | ((unit >>> 6) & 0x3f);
      bytes[at++] = 0x80 | (unit & 0x3f);
    } else {
      // A surrogate (wide strings only): a pair is one code point; a lone one, an escape, as
      // the well-formed JSON.stringify writes it.
      const low = i + 3 < stop ? input[i + 2]! | (input[i + 3]! << 8) : 0;
      if (unit <= 0xdbff && low >= 0xdc00 && low <= 0xdfff) {
        const point = 0x10000 + ((unit - 0xd800) << 10) + (low - 0xdc00);
        bytes[at++] = 0xf0 | (point >>> 18);
        bytes[at++] = 0x80 | ((point >>> 12) & 0x3f);
        bytes[at++] = 0x80 | ((point >>> 6) & 0x3f);
        bytes[at++] = 0x80 | (point & 0x3f);
        i += 2;
      } else {
        at = writeUnicodeEscape(bytes, at, unit);
      }
    }
  }
  bytes[at++] = 0x22;
  outAt = at;
  offset = stop;
}

function writeAscii(text: string): void {
  const bytes = room(text.length);
  for (let i = 0; i < text.length; i++) bytes[outAt++] = text.charCodeAt(i);
}

function copyValue(depth: number): void {
  if (depth > 1000) throw UNSUPPORTED;
  switch (byte()) {
    case TAG.null:
      writeAscii('null');
      return;
    case TAG.false:
      writeAscii('false');
      return;
    case TAG.true:
      writeAscii('true');
      return;
    case TAG.int32: {
      const zigzag = readLeb128();
      writeAscii(String(zigzag % 2 === 0 ? zigzag / 2 : -(zigzag + 1) / 2));
      return;
    }
    case TAG.float64: {
      if (offset + 8 > end) throw UNSUPPORTED;
      const number = input.readDoubleLE(offset);
      offset += 8;
      if (!Number.isFinite(number)) throw UNSUPPORTED;
      // A finite number's JSON text is its ToString, V8's and the engine's alike.
      writeAscii(String(number));
      return;
    }
    case TAG.string:
      copyString();
      return;
    case TAG.array: {
      const length = readLeb128();
      put(0x5b);
      for (let i = 0; i < length; i++) {
        if (i > 0) put(0x2c);
        copyValue(depth + 1);
      }
      put(0x5d);
      return;
    }
    case TAG.object: {
      const count = readLeb128();
      put(0x7b);
      for (let i = 0; i < count; i++) {
        if (i > 0) put(0x2c);
        const atom = readLeb128();
        // An integer key: JSON.stringify writes those first, ascending; the strict serializer does.
        if (atom % 2 === 1) throw UNSUPPORTED;
        const at = atomAt[atom / 2 - 1];
        if (at === undefined) throw UNSUPPORTED;
        const resume = offset;
        offset = at;
        copyString();
        offset = resume;
        put(0x3a);
        copyValue(depth + 1);
      }
      put(0x7d);
      return;
    }
    default:
      throw UNSUPPORTED;
  }
}

/** Whether the engine's bytes from `start` to `stop` are `undefined` alone (no atoms): what a skip writes. */
export function isUndefined(bytes: Buffer, start: number, stop: number): boolean {
  return stop - start === 3 && bytes[start] === VERSION && bytes[start + 1] === 0 && bytes[start + 2] === TAG.undefined;
}

/** A ten-digit name over 2^31 - 1, up to 2^32 - 2: an array index the engine keeps as a string, in Latin-1 bytes. */
function bigIndex(start: number, units: number): boolean {
  if (units !== 10 || input[start]! < 0x31 || input[start]! > 0x39) return false;
  for (let i = start; i < start + 10; i++) if (input[i]! < 0x30 || input[i]! > 0x39) return false;
  return Number(input.toString('latin1', start, start + 10)) < 2 ** 32 - 1;
}

/**
 * The UTF-8 JSON text, as `JSON.stringify` would write it, of an output the engine wrote into
 * `bytes` from `start` to `stop`: a new Buffer. Undefined when it holds anything but plain JSON
 * data, or its strings and names alone pass `limit` characters (the strict serializer then says so).
 */
export function toJsonBytes(bytes: Buffer, start: number, stop: number, limit: number): Buffer | undefined {
  input = bytes;
  offset = start;
  end = stop;
  characters = 0;
  characterLimit = limit;
  outAt = 0;
  try {
    if (byte() !== VERSION) throw UNSUPPORTED;
    const count = readLeb128();
    atomAt = [];
    for (let i = 0; i < count; i++) {
      atomAt.push(offset);
      const head = readLeb128();
      const units = Math.floor(head / 2);
      if (head % 2 === 0 && bigIndex(offset, units)) throw UNSUPPORTED;
      offset += head % 2 === 1 ? units * 2 : units;
    }
    copyValue(0);
    if (offset !== end) throw UNSUPPORTED;
    return Buffer.copyBytesFrom(out, 0, outAt);
  } catch (error) {
    // The reader's own refusal, or the host's stack under very deep nesting.
    if (error === UNSUPPORTED || error instanceof RangeError) return undefined;
    throw error;
  } finally {
    input = EMPTY;
  }
}
