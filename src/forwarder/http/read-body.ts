import type { IncomingMessage } from 'node:http';
import { gunzip, inflate } from 'node:zlib';

export type BodyRead =
  | { readonly ok: true; readonly body: Buffer }
  /** Larger than the limit; `size` is what was seen before giving up (or the Content-Length). */
  | { readonly ok: false; readonly size: number };

/**
 * Reads a request body up to `limit` bytes. Past the limit it stops keeping bytes and resolves
 * at once so the caller can answer 413; the rest of the upload is read and dropped (up to
 * `drainLimit`, then the socket is destroyed), so the client sees the 413 rather than a reset.
 * Rejects when the client aborts.
 */
export function readBody(req: IncomingMessage, limit: number, drainLimit = limit * 4): Promise<BodyRead> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers['content-length']);
    const chunks: Buffer[] = [];
    let size = 0;
    let over = Number.isFinite(declared) && declared > limit;
    if (over) {
      resolve({ ok: false, size: declared });
    }
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (over) {
        if (size > drainLimit) req.destroy();
        return;
      }
      if (size > limit) {
        over = true;
        chunks.length = 0;
        resolve({ ok: false, size });
        return;
      }
      chunks.push(chunk);
    });
    let ended = false;
    req.on('end', () => {
      ended = true;
      if (!over) resolve({ ok: true, body: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size) });
    });
    // A client that goes away mid-upload: settle (a no-op once resolved) so nothing waits forever.
    req.on('close', () => {
      if (!ended) reject(new Error('request aborted'));
    });
    req.on('error', reject);
  });
}

export type BodyDecode =
  | { readonly ok: true; readonly body: Buffer }
  | { readonly ok: false; readonly reason: 'too_large' | 'corrupt' | 'unsupported' };

/**
 * Undoes `Content-Encoding: gzip` or `deflate` (the client's `gzip` option). The limit applies
 * to the decoded bytes too, so a small compressed body cannot expand past it.
 */
export async function decodeBody(body: Buffer, encoding: string | undefined, limit: number): Promise<BodyDecode> {
  const name = (encoding ?? 'identity').trim().toLowerCase();
  if (name === 'identity' || name === '') return { ok: true, body };
  if (name !== 'gzip' && name !== 'x-gzip' && name !== 'deflate') return { ok: false, reason: 'unsupported' };
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
