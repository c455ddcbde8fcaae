import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { describe, it } from 'mocha';
import { expect } from 'chai';

const src = join(import.meta.dirname, '..', '..', 'src');

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? files(path) : path.endsWith('.ts') ? [path] : [];
  });
}

/** The top-level area of a file under src/: `messages`, `client`, `forwarder/cli`, `errors.ts`, ... */
function area(file: string): string {
  const parts = relative(src, file).split('/');
  if (parts[0] === 'forwarder' && parts[1] === 'cli') return 'forwarder/cli';
  return parts[0]!;
}

/** What each area may import from inside src/ (besides itself). */
const ALLOWED: Record<string, readonly string[]> = {
  'errors.ts': [],
  'version.ts': [],
  'clock.ts': [],
  internal: ['errors.ts', 'version.ts'],
  messages: ['errors.ts', 'internal', 'version.ts'],
  transport: ['errors.ts', 'internal', 'clock.ts', 'version.ts'],
  client: ['errors.ts', 'internal', 'messages', 'transport', 'clock.ts', 'version.ts'],
  webhooks: ['errors.ts', 'internal', 'messages', 'clock.ts', 'version.ts'],
  delivery: ['errors.ts', 'internal', 'messages', 'transport', 'webhooks', 'clock.ts', 'version.ts'],
  compat: ['errors.ts', 'internal', 'messages', 'transport', 'client', 'clock.ts', 'version.ts', 'index.ts'],
  forwarder: ['errors.ts', 'internal', 'messages', 'transport', 'delivery', 'webhooks', 'clock.ts', 'version.ts'],
  'forwarder/cli': ['errors.ts', 'internal', 'messages', 'transport', 'delivery', 'webhooks', 'forwarder', 'clock.ts', 'version.ts'],
  'index.ts': ['errors.ts', 'internal', 'messages', 'transport', 'client', 'clock.ts', 'version.ts'],
};

describe('the layering of src/ (README architecture)', () => {
  it('imports point one way: messages, errors and internal at the bottom, the CLI at the top', () => {
    const wrong: string[] = [];
    for (const file of files(src)) {
      const from = area(file);
      const allowed = ALLOWED[from];
      expect(allowed, `an area for ${relative(src, file)}`).to.not.equal(undefined);
      for (const [, spec] of readFileSync(file, 'utf8').matchAll(/(?:from|import\()\s*'(\.{1,2}\/[^']+)'/g)) {
        const target = join(dirname(file), spec!);
        const to = area(existsAsFile(target));
        if (to !== from && !allowed!.includes(to)) wrong.push(`${relative(src, file)} -> ${spec} (${from} -> ${to})`);
      }
    }
    expect(wrong).to.deep.equal([]);
  });
});

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
