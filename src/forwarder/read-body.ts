import type { IncomingMessage } from 'node:http';

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
    req.on('end', () => {
      if (!over) resolve({ ok: true, body: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size) });
    });
    req.on('aborted', () => reject(new Error('request aborted')));
    req.on('error', reject);
  });
}
