import type { IncomingMessage } from 'node:http';
import { gunzip, inflate } from 'node:zlib';
import { readNodeRequest } from 'eventrelay/internal';
import type { NodeBodyRead } from 'eventrelay/internal';

export type BodyRead = NodeBodyRead;

/**
 * How much of an oversized upload is read and dropped, in bytes, before the 413, so that the
 * client finishes sending and reads it: one cut off mid-upload sees a connection reset and
 * retries the same body. Past this (or a larger declared length) the 413 goes at once and the
 * connection closes after it.
 */
export const DRAIN_BYTES = 16 * 1024 * 1024;

/**
 * Reads a request body up to `limit` bytes; a larger one is read to its end and dropped (up to
 * `drainLimit` bytes in all) and resolves `ok: false` so the caller answers 413. Rejects when
 * the client aborts before the end of the body.
 */
export function readBody(req: IncomingMessage, limit: number, drainLimit = Math.max(DRAIN_BYTES, limit * 2)): Promise<BodyRead> {
  return readNodeRequest(req, { limit, excess: drainLimit });
}

export type BodyDecode =
  | { readonly ok: true; readonly body: Buffer }
  | { readonly ok: false; readonly reason: 'too_large' | 'corrupt' | 'unsupported' };

/**
 * Undoes `Content-Encoding: gzip` or `deflate` (the client's `gzip` option). The limit applies
 * to the decoded bytes too, so a small compressed body cannot expand past it. A promise only when
 * there is something to decompress: most requests are not compressed.
 */
export function decodeBody(body: Buffer, encoding: string | undefined, limit: number): BodyDecode | Promise<BodyDecode> {
  const name = (encoding ?? 'identity').trim().toLowerCase();
  if (name === 'identity' || name === '') return { ok: true, body };
  if (name !== 'gzip' && name !== 'x-gzip' && name !== 'deflate') return { ok: false, reason: 'unsupported' };
  return decompress(body, name, limit);
}

async function decompress(body: Buffer, name: string, limit: number): Promise<BodyDecode> {
  try {
    const decoded = await new Promise<Buffer>((resolve, reject) => {
      const done = (error: Error | null, result: Buffer) => (error ? reject(error) : resolve(result));
      if (name === 'deflate') inflate(body, { maxOutputLength: limit }, done);
      else gunzip(body, { maxOutputLength: limit }, done);
    });
    return { ok: true, body: decoded };
  } catch (error) {
    return { ok: false, reason: (error as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE' ? 'too_large' : 'corrupt' };
  }
}
