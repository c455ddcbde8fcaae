import { describe, it } from 'mocha';
import { expect } from 'chai';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { readDoc, ROOT, section } from './markdown';

interface PackageJson {
  name: string;
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
  devDependencies?: Record<string, string>;
  files?: string[];
}

const readJson = (path: string): PackageJson => JSON.parse(readFileSync(join(ROOT, path), 'utf8')) as PackageJson;
const root = readJson('package.json');
const packages = ['packages/eventrelay', 'packages/forwarder'].map((dir) => ({ dir, pkg: readJson(`${dir}/package.json`), readme: readDoc(`${dir}/README.md`) }));

/** A "... and why" table: package names by its `where` column (`runtime`, `optional peer`, `build`, ...). */
function dependencyTable(text: string): Map<string, Set<string>> {
  const rows = new Map<string, Set<string>>();
  for (const line of text.split('\n')) {
    const cells = line.split('|').map((cell) => cell.trim());
    if (cells.length < 5 || !cells[1]!.startsWith('`')) continue;
    const where = cells[2]!;
    expect(cells[3], `why ${cells[1]} is there`).to.have.length.above(10);
    for (const match of cells[1]!.matchAll(/`([^`]+)`/g)) {
      const set = rows.get(where) ?? new Set<string>();
      set.add(match[1]!);
      rows.set(where, set);
    }
  }
  return rows;
}

const named = (table: Map<string, Set<string>>, ...wheres: string[]): string[] =>
  [...new Set(wheres.flatMap((w) => [...(table.get(w) ?? [])]))].sort();

const NUMBERS = ['No', 'One', 'Two', 'Three', 'Four', 'Five', 'Six', 'Seven', 'Eight', 'Nine', 'Ten'];

describe('package hygiene', () => {
  for (const { dir, pkg, readme } of packages) {
    describe(`${pkg.name} (${dir})`, () => {
      const table = dependencyTable(section(readme, '## Dependencies and why'));

      it('its README names every runtime dependency and optional peer of its package.json, and why, and nothing else', () => {
        expect(named(table, 'runtime')).to.deep.equal(Object.keys(pkg.dependencies ?? {}).sort());
        expect(named(table, 'optional peer')).to.deep.equal(Object.keys(pkg.peerDependencies ?? {}).sort());
        expect([...table.keys()].filter((where) => where !== 'runtime' && where !== 'optional peer')).to.deep.equal([]);
      });

      it('says how many runtime dependencies it has, and every peer dependency is optional', () => {
        const count = Object.keys(pkg.dependencies ?? {}).length;
        expect(section(readme, '## Dependencies and why')).to.contain(`${NUMBERS[count]} runtime dependencies`);
        for (const name of Object.keys(pkg.peerDependencies ?? {})) expect(pkg.peerDependenciesMeta?.[name]?.optional, name).to.equal(true);
      });

      it('publishes its README', () => {
        expect(pkg.files).to.include('README.md');
      });
    });
  }

  it('the SDK needs none of the forwarder\'s dependencies', () => {
    const sdk = packages.find((p) => p.pkg.name === 'eventrelay')!.pkg;
    const all = [...Object.keys(sdk.dependencies ?? {}), ...Object.keys(sdk.peerDependencies ?? {})];
    for (const name of ['undici', 'prom-client', 'pg', 'better-sqlite3']) expect(all, name).to.not.include(name);
  });

  it('the root README names every development dependency of the repository, and why, and nothing else', () => {
    const table = dependencyTable(section(readDoc('README.md'), '## Development dependencies and why'));
    const dev = [root, ...packages.map((p) => p.pkg)]
      .flatMap((pkg) => Object.keys(pkg.devDependencies ?? {}))
      .map((name) => (name.startsWith('@types/') ? '@types/*' : name));
    expect(named(table, 'build', 'lint', 'test')).to.deep.equal([...new Set(dev)].sort());
    expect([...table.keys()].filter((where) => !['build', 'lint', 'test'].includes(where))).to.deep.equal([]);
  });

  it('the forwarder ships the example config its README links to', () => {
    const forwarder = packages.find((p) => p.pkg.name === '@eventrelay/forwarder')!;
    expect(forwarder.readme).to.contain('](examples/eventrelay.config.json)');
    expect(forwarder.pkg.files).to.include('examples/eventrelay.config.json');
    expect(existsSync(join(ROOT, forwarder.dir, 'examples/eventrelay.config.json'))).to.equal(true);
  });
});
