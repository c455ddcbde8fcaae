import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { fileURLToPath } from 'node:url';

/**
 * The debugger page: static files (the page, its style, its icon and its script, native ES
 * modules: app.js imports the others) shipped in the package (`dist/debugger/`), no CDN, no
 * framework, no build step. They hold no data: the page signs in with the admin token, kept in
 * sessionStorage, and calls the admin API with it in the Authorization header.
 */

/** Everything comes from the forwarder itself; no inline script or style is allowed. */
export const DEBUGGER_CSP =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
  "base-uri 'none'; form-action 'none'; frame-ancestors 'none'; object-src 'none'";

/**
 * The page's files, as the build copies them into dist/debugger (tsup.config.ts): the page, its
 * style, its icon, and its script's modules (app.js the entry, one module per view and the helpers
 * they share).
 */
export const DEBUGGER_FILES = [
  'index.html',
  'app.css',
  'favicon.svg',
  'app.js',
  'api.js',
  'dom.js',
  'views.js',
  'tabs/live.js',
  'tabs/message.js',
  'tabs/search.js',
  'tabs/overview.js',
  'tabs/chart.js',
  'tabs/sources.js',
  'tabs/webhooks-form.js',
  'tabs/schema.js',
] as const;

const TYPES: Readonly<Record<string, string>> = {
  html: 'text/html; charset=utf-8',
  js: 'text/javascript; charset=utf-8',
  css: 'text/css; charset=utf-8',
  svg: 'image/svg+xml',
};

/** Each path served, with its file and content type (a module script must come as JavaScript). */
const FILES: ReadonlyMap<string, { file: string; type: string }> = new Map([
  ['/debugger', { file: 'index.html', type: TYPES.html! }],
  ...DEBUGGER_FILES.map((file) => [`/debugger/${file === 'index.html' ? '' : file}`, { file, type: TYPES[file.slice(file.lastIndexOf('.') + 1)]! }] as const),
]);

interface Asset {
  readonly bytes: Buffer;
  readonly etag: string;
}

let directory: string | undefined;
const cache = new Map<string, Asset>();

/** The folder of the page's files: beside the built code in dist, or in the sources when run from them. */
function assetDirectory(): string {
  if (directory !== undefined) return directory;
  const candidates = ['./debugger/', '../debugger/', './'].map((rel) => fileURLToPath(new URL(rel, import.meta.url)));
  const found = candidates.find((dir) => existsSync(`${dir}index.html`));
  if (found === undefined) throw new Error('The debugger page files are missing from the package (dist/debugger)');
  directory = found;
  return found;
}

function asset(file: string): Asset {
  let cached = cache.get(file);
  if (cached === undefined) {
    const bytes = readFileSync(`${assetDirectory()}${file}`);
    cached = { bytes, etag: `"${createHash('sha256').update(bytes).digest('base64url').slice(0, 22)}"` };
    cache.set(file, cached);
  }
  return cached;
}

/** Names and sizes of the page's files, in bytes. */
export function debuggerFiles(): Array<{ file: string; bytes: number }> {
  return DEBUGGER_FILES.map((file) => ({ file, bytes: asset(file).bytes.length }));
}

/** Serves a file of the page; false for a path that is not one. */
export function serveDebugger(path: string, req: IncomingMessage, res: ServerResponse): boolean {
  const entry = FILES.get(path);
  if (entry === undefined) return false;
  const { bytes, etag } = asset(entry.file);
  const headers = {
    'Content-Type': entry.type,
    'Content-Security-Policy': DEBUGGER_CSP,
    'X-Content-Type-Options': 'nosniff',
    'Referrer-Policy': 'no-referrer',
    'X-Frame-Options': 'DENY',
    'Cache-Control': 'no-cache',
    ETag: etag,
  };
  if (req.headers['if-none-match'] === etag) {
    res.writeHead(304, headers).end();
    return true;
  }
  res.writeHead(200, { ...headers, 'Content-Length': bytes.length });
  res.end(req.method === 'HEAD' ? undefined : bytes);
  return true;
}
