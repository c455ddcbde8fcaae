import type { IncomingMessage } from 'node:http';

export type NodeBodyRead =
  | { readonly ok: true; readonly body: Buffer }
  /** Larger than `limit`: `size` is the declared Content-Length, or the bytes seen when reading stopped. */
  | { readonly ok: false; readonly size: number };

export interface NodeBodyOptions {
  /** Largest body kept, in bytes. */
  readonly limit: number;
  /**
   * What happens to the rest of an oversized upload.
   *
   * `'stop'`: the read settles as soon as the body is known to be too large, and nothing more is
   * read; the caller answers and closes the connection.
   *
   * A number of bytes: the rest is read and dropped, up to that many bytes in all, and the read
   * settles when the upload ends. Node closes a connection whose request was not read to the
   * end as soon as the answer is written, and a client still sending then gets a reset instead of
   * the answer; draining first lets it read the answer. A declared length over the bound, or an
   * upload that passes it, settles at once (the connection then closes after the answer).
   */
  readonly excess: 'stop' | number;
}

/**
 * The one reader of a Node request body, for the forwarder's API and the receiver adapters.
 * Resolves with the whole body (one Buffer, no copy when it came in one chunk), or `ok: false`
 * for a body over `limit` (see `excess` for when). Rejects with the socket's error, or an
 * `Error`, when the client goes away before the end of the body.
 */
export function readNodeRequest(request: IncomingMessage, options: NodeBodyOptions): Promise<NodeBodyRead> {
  const { limit, excess } = options;
  const bound = excess === 'stop' ? limit : Math.max(excess, limit);
  const declared = Number(request.headers['content-length']);
  // Refused unread: nothing to gain from reading what will be refused anyway.
  if (Number.isFinite(declared) && declared > bound) return Promise.resolve({ ok: false, size: declared });

  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;

    const cleanup = (): void => {
      request.off('data', onData);
      request.off('end', onEnd);
      request.off('error', onError);
      request.off('close', onClose);
    };
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > bound) {
        cleanup();
        request.pause();
        resolve({ ok: false, size });
        return;
      }
      // Past the limit (while draining), bytes are counted and dropped.
      if (size <= limit) chunks.push(chunk);
      else chunks.length = 0;
    };
    const onEnd = (): void => {
      cleanup();
      resolve(size > limit ? { ok: false, size } : { ok: true, body: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size) });
    };
    const onError = (error: Error): void => {
      cleanup();
      reject(error);
    };
    // A client that goes away mid-upload: settle, so that nothing waits forever.
    const onClose = (): void => onError(new Error('the connection closed before the end of the body'));

    request.on('data', onData);
    request.on('end', onEnd);
    request.on('error', onError);
    request.on('close', onClose);
  });
}
