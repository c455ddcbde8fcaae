import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { describe, it } from 'mocha';
import { expect } from 'chai';

const packages = join(import.meta.dirname, '..', '..', 'packages');
const sdk = join(packages, 'eventrelay', 'src');
const forwarder = join(packages, 'forwarder', 'src');

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? files(path) : path.endsWith('.ts') ? [path] : [];
  });
}

/** Every import specifier of a file: relative ones and package ones. */
function specifiers(file: string): string[] {
  return [...readFileSync(file, 'utf8').matchAll(/(?:from|import\()\s*'([^']+)'/g)].map((m) => m[1]!);
}

/** The area of an SDK file: `messages`, `client`, `errors.ts`, `shared` (the `eventrelay/internal` entry the forwarder loads), ... */
function area(file: string): string {
  const path = relative(sdk, file);
  return path.split('/')[0]!;
}

/** What each area of the SDK may import from inside its src/ (besides itself). */
const ALLOWED: Record<string, readonly string[]> = {
  'errors.ts': [],
  'version.ts': [],
  'clock.ts': [],
  internal: ['errors.ts', 'version.ts'],
  messages: ['errors.ts', 'internal', 'version.ts'],
  transport: ['errors.ts', 'internal', 'clock.ts', 'version.ts'],
  client: ['errors.ts', 'internal', 'messages', 'transport', 'clock.ts', 'version.ts'],
  webhooks: ['errors.ts', 'internal', 'messages', 'clock.ts', 'version.ts'],
  compat: ['errors.ts', 'internal', 'messages', 'transport', 'client', 'clock.ts', 'version.ts', 'index.ts'],
  'index.ts': ['errors.ts', 'internal', 'messages', 'transport', 'client', 'clock.ts', 'version.ts'],
  // The entry `@eventrelay/forwarder` loads: it re-exports what the two packages share.
  shared: ['errors.ts', 'internal', 'messages', 'transport', 'webhooks', 'clock.ts', 'version.ts'],
};

function existsAsFile(path: string): string {
  for (const candidate of [path, `${path}.ts`, join(path, 'index.ts')]) {
    try {
      if (statSync(candidate).isFile()) return candidate;
    } catch {
      // try the next form
    }
  }
  return path;
}

describe('the layering of the SDK (packages/eventrelay/src)', () => {
  it('imports point one way: messages, errors and internal at the bottom, the entry points at the top', () => {
    const wrong: string[] = [];
    for (const file of files(sdk)) {
      const from = area(file);
      const allowed = ALLOWED[from];
      expect(allowed, `an area for ${relative(sdk, file)}`).to.not.equal(undefined);
      for (const spec of specifiers(file).filter((s) => s.startsWith('.'))) {
        const target = existsAsFile(join(dirname(file), spec));
        expect(target.startsWith(sdk), `${relative(sdk, file)} imports ${spec}, outside the SDK`).to.equal(true);
        const to = area(target);
        if (to !== from && !allowed!.includes(to)) wrong.push(`${relative(sdk, file)} -> ${spec} (${from} -> ${to})`);
      }
    }
    expect(wrong).to.deep.equal([]);
  });

  it('never loads what only the forwarder needs', () => {
    const forwarderOnly = ['undici', 'prom-client', 'pg', 'better-sqlite3', '@eventrelay/forwarder'];
    const found = files(sdk).flatMap((file) => specifiers(file).filter((s) => forwarderOnly.includes(s)).map((s) => `${relative(sdk, file)} -> ${s}`));
    expect(found).to.deep.equal([]);
  });
});

describe('the forwarder package (packages/forwarder/src)', () => {
  it('takes what it shares with the SDK from the eventrelay package, never from its sources', () => {
    const wrong: string[] = [];
    for (const file of files(forwarder)) {
      for (const spec of specifiers(file)) {
        if (spec.startsWith('.') && !existsAsFile(join(dirname(file), spec)).startsWith(forwarder)) wrong.push(`${relative(forwarder, file)} -> ${spec}`);
        if (spec.startsWith('eventrelay/') && spec !== 'eventrelay/internal' && spec !== 'eventrelay/webhooks') wrong.push(`${relative(forwarder, file)} -> ${spec}`);
      }
    }
    expect(wrong).to.deep.equal([]);
  });

  it('the CLI is at the top: nothing else imports it', () => {
    const importers = files(forwarder)
      .filter((file) => !relative(forwarder, file).startsWith('cli/'))
      .filter((file) => specifiers(file).some((s) => s.startsWith('.') && existsAsFile(join(dirname(file), s)).includes(`${forwarder}/cli/`)));
    expect(importers.map((f) => relative(forwarder, f))).to.deep.equal([]);
  });
});

/** The area of a forwarder file: its folder under src/, or the file itself at the top. */
function forwarderArea(file: string): string {
  return relative(forwarder, file).split('/')[0]!;
}

/**
 * The forwarder's layers, bottom to top: what each area may import from inside its src/ (besides
 * itself). The OpenTelemetry spans (tracing.ts, which the HTTP and delivery layers record), the
 * schema checker (validation/: TypeBox schemas compiled by Ajv), the store and its contract at the
 * bottom, then the transform sandbox (which imports nothing of the forwarder), delivery, the
 * config file (config/), routing, the delivery loop, the registry of sources, what operators see, the HTTP server and the admin API;
 * the parts of a running forwarder and their composition (runtime/), the facade and the entry
 * above them, the CLI on top.
 */
const FORWARDER_LAYERS: readonly string[] = [
  'version.ts',
  'redact.ts',
  'source-names.ts',
  'tracing.ts',
  'validation',
  'store',
  'schema-rules.ts',
  'batch-body.ts', // batched delivery's bodies (issue 45): pure, imports nothing
  'transform',
  'delivery',
  'config',
  'routing',
  'scheduling',
  'registry',
  'observability',
  'debugger',
  'http',
  'admin',
  'runtime',
  'service.ts',
  'index.ts',
  'cli',
];

describe('the layering of the forwarder (packages/forwarder/src)', () => {
  it('imports point one way: each area imports only the areas below it, so no two import each other', () => {
    const wrong: string[] = [];
    for (const file of files(forwarder)) {
      const from = forwarderArea(file);
      const level = FORWARDER_LAYERS.indexOf(from);
      expect(level, `a layer for ${relative(forwarder, file)}`).to.be.at.least(0);
      for (const spec of specifiers(file).filter((s) => s.startsWith('.'))) {
        const to = forwarderArea(existsAsFile(join(dirname(file), spec)));
        if (to !== from && !(FORWARDER_LAYERS.indexOf(to) >= 0 && FORWARDER_LAYERS.indexOf(to) < level)) wrong.push(`${relative(forwarder, file)} -> ${spec} (${from} -> ${to})`);
      }
    }
    expect(wrong).to.deep.equal([]);
  });

  it('no file imports itself back through others, type-only imports included (no import circle inside an area either)', () => {
    const graph = new Map<string, string[]>();
    for (const file of files(forwarder)) {
      graph.set(file, specifiers(file).filter((s) => s.startsWith('.')).map((s) => existsAsFile(join(dirname(file), s))));
    }
    const circles: string[] = [];
    const state = new Map<string, 'open' | 'done'>();
    const visit = (file: string, path: string[]): void => {
      if (state.get(file) === 'done') return;
      if (state.get(file) === 'open') {
        circles.push([...path.slice(path.indexOf(file)), file].map((f) => relative(forwarder, f)).join(' -> '));
        return;
      }
      state.set(file, 'open');
      for (const next of graph.get(file) ?? []) visit(next, [...path, file]);
      state.set(file, 'done');
    };
    for (const file of graph.keys()) visit(file, []);
    expect(circles).to.deep.equal([]);
  });

  it('names no concrete store outside store/: the contract is what the rest uses', () => {
    const concrete = /\b(?:instanceof\s+(?:MemoryStore|SqliteStore|PostgresStore))\b/;
    const found = files(forwarder).filter((file) => !relative(forwarder, file).startsWith('store/') && concrete.test(readFileSync(file, 'utf8')));
    expect(found.map((f) => relative(forwarder, f))).to.deep.equal([]);
  });
});
