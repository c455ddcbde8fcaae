import { describe, it } from 'mocha';
import { expect } from 'chai';
import { readFileSync } from 'node:fs';

interface PackageJson {
  dependencies: Record<string, string>;
  peerDependencies: Record<string, string>;
  peerDependenciesMeta: Record<string, { optional?: boolean }>;
  devDependencies: Record<string, string>;
  files: string[];
}

const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as PackageJson;
const readme = readFileSync('README.md', 'utf8');

/** The README's "Dependencies and why" table: package names by the `where` column. */
function dependencyTable(): Map<string, Set<string>> {
  const section = /\n## Dependencies and why\n([\s\S]*?)(?:\n## |\n<!-- section|$)/.exec(readme)?.[1] ?? '';
  const rows = new Map<string, Set<string>>();
  for (const line of section.split('\n')) {
    const cells = line.split('|').map((cell) => cell.trim());
    if (cells.length < 4 || !cells[1]!.startsWith('`')) continue;
    const where = cells[2]!;
    for (const match of cells[1]!.matchAll(/`([^`]+)`/g)) {
      const set = rows.get(where) ?? new Set<string>();
      set.add(match[1]!);
      rows.set(where, set);
    }
  }
  return rows;
}

describe('package hygiene', () => {
  it('the README names every dependency of package.json, where it is used, and nothing else', () => {
    const table = dependencyTable();
    const named = (...wheres: string[]) => [...new Set(wheres.flatMap((w) => [...(table.get(w) ?? [])]))].sort();
    expect(named('runtime')).to.deep.equal(Object.keys(pkg.dependencies).sort());
    expect(named('optional peer')).to.deep.equal(Object.keys(pkg.peerDependencies).sort());
    const dev = Object.keys(pkg.devDependencies)
      .map((name) => (name.startsWith('@types/') ? '@types/*' : name))
      .filter((name, i, all) => all.indexOf(name) === i)
      .sort();
    expect(named('build', 'lint', 'test')).to.deep.equal(dev);
  });

  it('has four runtime dependencies, and every peer dependency is optional', () => {
    expect(readme).to.contain('Four runtime dependencies');
    expect(Object.keys(pkg.dependencies)).to.have.length(4);
    for (const name of Object.keys(pkg.peerDependencies)) expect(pkg.peerDependenciesMeta[name]?.optional, name).to.equal(true);
  });

  it('ships the example config the README links to', () => {
    expect(readme).to.contain('](examples/eventrelay.config.json)');
    expect(pkg.files).to.include('examples/eventrelay.config.json');
  });
});
