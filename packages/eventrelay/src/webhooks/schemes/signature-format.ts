/**
 * The value of the `X-Signature` header as a framework hands it over: a string, an array
 * when the framework keeps repeated headers apart, or nothing.
 */
export type SignatureHeader = string | readonly string[] | null | undefined;

/** A hex SHA-1 digest has 40 characters (20 bytes). */
export const SIGNATURE_HEX_LENGTH = 40;

const DIGEST_BYTES = SIGNATURE_HEX_LENGTH / 2;

/**
 * The 20 bytes a header value stands for, or `undefined` when it is not exactly one signature
 * of exactly 40 hex digits. Upper- and lowercase digits are both accepted (hex is case
 * insensitive; the sender writes lowercase). More than one value is refused: the sender sends
 * one, so a second one was added on the way. Decoding validates as it goes, unlike
 * `Buffer.from(hex, 'hex')`, which stops silently at the first non-hex character.
 */
export function decodeSignature(header: unknown): Uint8Array | undefined {
  let value = header;
  if (Array.isArray(header)) {
    if (header.length !== 1) return undefined;
    value = header[0];
  }
  if (typeof value !== 'string' || value.length !== SIGNATURE_HEX_LENGTH) return undefined;
  const bytes = new Uint8Array(DIGEST_BYTES);
  for (let i = 0; i < DIGEST_BYTES; i++) {
    const high = hexValue(value.charCodeAt(2 * i));
    const low = hexValue(value.charCodeAt(2 * i + 1));
    if ((high | low) < 0) return undefined;
    bytes[i] = (high << 4) | low;
  }
  return bytes;
}

/** Lowercase hex of `bytes`, the form the sender puts in `X-Signature`. */
export function toHex(bytes: Uint8Array): string {
  let hex = '';
  for (let i = 0; i < bytes.length; i++) hex += HEX_PAIRS[bytes[i]!];
  return hex;
}

const HEX_PAIRS = Array.from({ length: 256 }, (_, byte) => byte.toString(16).padStart(2, '0'));

/** 0-15 for a hex digit's char code, -1 for anything else (including non-ASCII). */
function hexValue(code: number): number {
  if (code >= 48 && code <= 57) return code - 48; // 0-9
  const lower = code | 0x20; // folds A-F onto a-f; leaves every other code outside a-f
  if (lower >= 97 && lower <= 102) return lower - 87;
  return -1;
}
