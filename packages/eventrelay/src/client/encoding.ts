/*
 * Byte lengths and gzip without Node's Buffer and zlib, so the client runs where they are
 * missing (Cloudflare Workers, Vercel Edge); the same code runs on Node, Bun and Deno.
 */

/** Node's `Buffer` where the runtime has one (Node, Bun, Deno): its `byteLength` is native and about ten times faster. */
const NodeBuffer = (globalThis as { Buffer?: { byteLength(text: string, encoding: 'utf8'): number } }).Buffer;

/** Bytes of `text` once encoded as UTF-8: with `Buffer.byteLength` where there is one, else counted. */
export function utf8ByteLength(text: string): number {
  return NodeBuffer === undefined ? countUtf8Bytes(text) : NodeBuffer.byteLength(text, 'utf8');
}

/**
 * Bytes of `text` once encoded as UTF-8, counted without encoding it. A lone surrogate counts as
 * the 3 bytes of the U+FFFD that replaces it, as `TextEncoder` and Node's `Buffer.byteLength` do
 * (`JSON.stringify` escapes lone surrogates anyway).
 */
export function countUtf8Bytes(text: string): number {
  let bytes = text.length;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x80) continue;
    if (code < 0x800) {
      bytes += 1;
    } else if (code >= 0xd800 && code <= 0xdbff && i + 1 < text.length && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      // A surrogate pair: two UTF-16 units, four bytes.
      bytes += 2;
      i++;
    } else {
      bytes += 2;
    }
  }
  return bytes;
}

const encoder = new TextEncoder();

/** `text` as UTF-8, gzipped with the runtime's `CompressionStream` (Node >= 18, Bun, Deno, Workers, Edge). */
export async function gzip(text: string): Promise<Uint8Array> {
  const stream = new CompressionStream('gzip');
  const writer = stream.writable.getWriter();
  // Written while the output is read, so backpressure cannot stall either side.
  const written = writer.write(encoder.encode(text)).then(() => writer.close());
  const reader = stream.readable.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    size += value.byteLength;
  }
  await written;
  if (chunks.length === 1) return chunks[0]!;
  const body = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    body.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return body;
}
