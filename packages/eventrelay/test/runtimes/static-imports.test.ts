import { existsSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { expect } from 'chai';
import { DIST, requireDist } from './harness';

/**
 * The entry points a Worker or an Edge function may load, ESM and CommonJS. None may import a
 * Node module, with or without the `node:` prefix (the build drops it): what Node offers is
 * looked up at run time (`process.getBuiltinModule`), where the runtime has it.
 */
const ENTRIES = [
  'index.js', 'index.cjs',
  'webhooks/index.js', 'webhooks/index.cjs',
  'segment/index.js', 'segment/index.cjs',
  'analytics-node/index.js', 'analytics-node/index.cjs', 'analytics-node/require.cjs',
];

const BUILTINS = new Set(builtinModules.flatMap((name) => [name, `node:${name}`]));

/** Literal specifiers of static imports and re-exports, `import()` and `require()`. */
const SPECIFIERS = [
  /^\s*(?:import|export)\b[^'"`;]*?\bfrom\s*["']([^"']+)["']/gm,
  /^\s*import\s*["']([^"']+)["']/gm,
  /\bimport\(\s*["']([^"']+)["']\s*\)/g,
  /\brequire\(\s*["']([^"']+)["']\s*\)/g,
];

function specifiersOf(file: string): string[] {
  const code = readFileSync(file, 'utf8');
  return SPECIFIERS.flatMap((pattern) => [...code.matchAll(pattern)].map((match) => match[1]!));
}

/** Every file `entry` loads (itself, and the chunks it imports, transitively), and the packages they import. */
function graphOf(entry: string): { files: string[]; packages: Map<string, string[]> } {
  const files: string[] = [];
  const packages = new Map<string, string[]>();
  const visit = (file: string): void => {
    if (files.includes(file)) return;
    files.push(file);
    for (const specifier of specifiersOf(file)) {
      if (specifier.startsWith('.')) {
        const target = join(dirname(file), specifier);
        expect(existsSync(target), `${relative(DIST, file)} imports ${specifier}`).to.equal(true);
        visit(target);
      } else {
        packages.set(specifier, [...(packages.get(specifier) ?? []), relative(DIST, file)]);
      }
    }
  };
  visit(join(DIST, entry));
  return { files, packages };
}

describe('the built entry points, read as a bundler for Workers or Vercel Edge reads them', () => {
  before(requireDist);

  for (const entry of ENTRIES) {
    it(`${entry} and the chunks it loads import no Node module`, () => {
      const { files, packages } = graphOf(entry);
      const builtins = [...packages].filter(([name]) => BUILTINS.has(name)).map(([name, from]) => `${name} (from ${from.join(', ')})`);
      expect(builtins).to.deep.equal([]);
      // What the walk must see for the check to mean anything: the chunks and the `debug` package every entry logs with.
      expect(files.length, `files loaded by ${entry}`).to.be.greaterThan(entry.endsWith('require.cjs') ? 2 : 1);
      expect([...packages.keys()], `packages imported by ${entry}`).to.include('debug');
    });
  }

  it('would see a Node module imported with or without the node: prefix, as tsup writes it', () => {
    expect(BUILTINS.has('events') && BUILTINS.has('node:crypto') && BUILTINS.has('http')).to.equal(true);
    const written = ['import { EventEmitter } from "events";', "var _crypto = require('crypto');", 'import "node:http";'].join('\n');
    expect(SPECIFIERS.flatMap((pattern) => [...written.matchAll(pattern)].map((match) => match[1]))).to.have.members(['events', 'crypto', 'node:http']);
  });
});
