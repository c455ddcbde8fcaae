import { describe, it } from 'mocha';
import { expect } from 'chai';
import { readdirSync, readFileSync } from 'node:fs';
import { join, posix } from 'node:path';
import { gzipSync } from 'node:zlib';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { DEBUGGER_CSP, DEBUGGER_FILES, debuggerFiles, serveDebugger } from '../../../src/debugger/page';

const root = join(import.meta.dirname, '..', '..', '..', '..', '..');

/** A response that records what was written. */
function fakeResponse() {
  const sent: { status?: number; headers?: Record<string, unknown>; body?: Buffer } = {};
  const res = {
    writeHead(status: number, headers: Record<string, unknown>) {
      sent.status = status;
      sent.headers = headers;
      return res;
    },
    end(body?: Buffer) {
      sent.body = body;
    },
  };
  return { res: res as unknown as ServerResponse, sent };
}

const get = (headers: Record<string, string> = {}) => ({ method: 'GET', headers }) as unknown as IncomingMessage;

describe('the debugger page files', () => {
  it('serves the page, its script and its style with a strict CSP and no inline code', () => {
    const modules = DEBUGGER_FILES.filter((file) => file.endsWith('.js'));
    for (const [path, type] of [
      ['/debugger', 'text/html'],
      ['/debugger/', 'text/html'],
      ['/debugger/app.css', 'text/css'],
      ['/debugger/favicon.svg', 'image/svg+xml'],
      // Every module of the script as JavaScript: a browser runs no module served as anything else.
      ...modules.map((file) => [`/debugger/${file}`, 'text/javascript'] as const),
    ] as const) {
      const { res, sent } = fakeResponse();
      expect(serveDebugger(path, get(), res)).to.equal(true);
      expect(sent.status).to.equal(200);
      expect(String(sent.headers!['Content-Type']).split(';')[0]).to.equal(type);
      expect(sent.headers!['Content-Security-Policy']).to.equal(DEBUGGER_CSP);
      expect(sent.headers!['X-Frame-Options']).to.equal('DENY');
    }
    expect(DEBUGGER_CSP).to.match(/^default-src 'self'; script-src 'self'; style-src 'self';/);
    expect(DEBUGGER_CSP).not.to.contain('unsafe');
    const html = readFileSync(join(root, 'packages/forwarder/src/debugger/index.html'), 'utf8');
    // Every script and style comes from a file: no inline code, no style attributes, nothing from elsewhere.
    expect(html.match(/<script[^>]*>/g)).to.deep.equal(['<script type="module" src="/debugger/app.js">']);
    expect(html).not.to.match(/<style|\sstyle=|\son[a-z]+=|https?:\/\//);
    // Its icon is one of its files, so that no browser asks for /favicon.ico.
    expect(html).to.contain('<link rel="icon" href="/debugger/favicon.svg" type="image/svg+xml">');
    for (const file of modules) {
      const js = readFileSync(join(root, 'packages/forwarder/src/debugger', file), 'utf8');
      expect(js, file).not.to.match(/innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(|new Function|EventSource/);
    }
  });

  it('ships every module the script imports, each checked by the typecheck (// @ts-check)', () => {
    const dir = join(root, 'packages/forwarder/src/debugger');
    const shipped = new Set<string>(DEBUGGER_FILES);
    // The entry and the helpers beside it, one module per view in tabs/.
    const onDisk = [...readdirSync(dir), ...readdirSync(join(dir, 'tabs')).map((file) => `tabs/${file}`)].filter((file) => file.endsWith('.js'));
    // A module left out of DEBUGGER_FILES would be missing from the package (and answer 404).
    expect(onDisk.filter((file) => !shipped.has(file)), 'modules not in DEBUGGER_FILES').to.deep.equal([]);
    for (const file of onDisk) {
      const js = readFileSync(join(dir, file), 'utf8');
      expect(js.startsWith('// @ts-check\n'), `${file} starts with // @ts-check`).to.equal(true);
      // Relative imports of files shipped in the page's folder; the server's types only in JSDoc, never loaded.
      for (const [, spec] of js.matchAll(/^import [^'\n]* from '([^']+)';$/gm)) {
        expect(spec, `an import of ${file}`).to.match(/^\.\.?\/([a-z-]+\/)?[a-z-]+\.js$/);
        const target = posix.normalize(posix.join(posix.dirname(file), spec!));
        expect(shipped.has(target), `${file} imports ${spec}, a shipped file`).to.equal(true);
      }
    }
  });

  it('answers 304 to a matching ETag and false for a path that is not one of its files', () => {
    const first = fakeResponse();
    serveDebugger('/debugger/app.js', get(), first.res);
    const again = fakeResponse();
    serveDebugger('/debugger/app.js', get({ 'if-none-match': String(first.sent.headers!.ETag) }), again.res);
    expect(again.sent.status).to.equal(304);
    expect(serveDebugger('/debugger/../config.json', get(), fakeResponse().res)).to.equal(false);
    expect(serveDebugger('/debugger/secret', get(), fakeResponse().res)).to.equal(false);
  });

  it('is as small as docs/operating-the-forwarder.md says', () => {
    const files = debuggerFiles();
    const total = files.reduce((sum, f) => sum + f.bytes, 0);
    const gzipped = gzipSync(Buffer.concat(DEBUGGER_FILES.map((f) => readFileSync(join(root, 'packages/forwarder/src/debugger', f))))).length;
    const guide = readFileSync(join(root, 'docs', 'operating-the-forwarder.md'), 'utf8');
    const stated = /^Size: (\d+) KB in (\d+) files \((\d+) KB gzipped\)/m.exec(guide);
    expect(stated, 'the size sentence of docs/operating-the-forwarder.md').to.not.equal(null);
    expect(Number(stated![1])).to.equal(Math.round(total / 1024));
    expect(Number(stated![2])).to.equal(files.length);
    expect(Number(stated![3])).to.equal(Math.round(gzipped / 1024));
  });
});
