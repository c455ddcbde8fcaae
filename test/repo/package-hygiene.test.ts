import { describe, it } from 'mocha';
import { expect } from 'chai';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import semver from 'semver';
import { anchors, readDoc, ROOT, section, withoutCode } from './markdown';

interface PackageJson {
  name: string;
  engines?: { node?: string };
  repository?: { type?: string; url?: string; directory?: string };
  homepage?: string;
  bugs?: { url?: string };
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

/** The repository every package names, and the base of the links its README gives on npm. */
const REPOSITORY = 'https://github.com/eventrelay/eventrelay';

/** Every link of a Markdown text (images too), outside code. */
const linksOf = (text: string): string[] => [...withoutCode(text).matchAll(/!?\[[^\]]*\]\(([^)\s]+)\)/g)].map((m) => m[1]!);

const NUMBERS = ['No', 'One', 'Two', 'Three', 'Four', 'Five', 'Six', 'Seven', 'Eight', 'Nine', 'Ten', 'Eleven', 'Twelve'];

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
        expect(section(readme, '## Dependencies and why')).to.contain(`${NUMBERS[count]} runtime ${count === 1 ? 'dependency' : 'dependencies'}`);
        for (const name of Object.keys(pkg.peerDependencies ?? {})) expect(pkg.peerDependenciesMeta?.[name]?.optional, name).to.equal(true);
      });

      it('publishes its README', () => {
        expect(pkg.files).to.include('README.md');
      });

      it('names its repository (with its directory), its homepage and where to report bugs', () => {
        expect(pkg.repository).to.deep.equal({ type: 'git', url: `git+${REPOSITORY}.git`, directory: dir });
        expect(pkg.homepage).to.equal(`${REPOSITORY}/tree/main/${dir}#readme`);
        expect(pkg.bugs).to.deep.equal({ url: `${REPOSITORY}/issues` });
      });

      it('gives only links that resolve from the npm registry page: absolute ones into the repository, to files and headings that exist', () => {
        const broken: string[] = [];
        for (const href of linksOf(readme)) {
          const [target, anchor] = href.split('#') as [string, string | undefined];
          if (target === '') {
            // A heading of the README itself: npm renders those anchors too.
            if (!anchors(readme).has(anchor!)) broken.push(`${href} (no such heading)`);
            continue;
          }
          if (!/^https?:\/\//.test(target)) {
            broken.push(`${href} (relative: npm shows the README alone, without the repository around it)`);
            continue;
          }
          if (!target.startsWith(`${REPOSITORY}/`)) continue;
          const match = /^(blob|tree)\/main\/(.+)$/.exec(target.slice(REPOSITORY.length + 1));
          if (match === null) {
            if (target !== `${REPOSITORY}/issues`) broken.push(`${href} (not a file or folder of main)`);
            continue;
          }
          const path = join(ROOT, match[2]!);
          if (!existsSync(path) || statSync(path).isDirectory() !== (match[1] === 'tree')) {
            broken.push(`${href} (no ${match[1] === 'tree' ? 'folder' : 'file'} ${match[2]} in the repository)`);
            continue;
          }
          if (anchor !== undefined && path.endsWith('.md') && !anchors(readFileSync(path, 'utf8')).has(anchor)) broken.push(`${href} (no heading #${anchor})`);
        }
        expect(broken).to.deep.equal([]);
        // The guides are reached: at least the ones each README is about.
        expect(linksOf(readme).filter((href) => href.startsWith(`${REPOSITORY}/blob/main/docs/`)).length).to.be.above(3);
      });

      it('links its changelog, which both packages share, and lists in `files` no CHANGELOG.md it does not have', () => {
        expect(linksOf(section(readme, '## Changelog'))).to.deep.equal([`${REPOSITORY}/blob/main/CHANGELOG.md`]);
        expect(existsSync(join(ROOT, 'CHANGELOG.md'))).to.equal(true);
        for (const entry of pkg.files ?? []) expect(existsSync(join(ROOT, dir, entry)) || entry === 'dist', `files names ${entry}`).to.equal(true);
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
    expect(forwarder.readme).to.contain(`](${REPOSITORY}/blob/main/packages/forwarder/examples/eventrelay.config.json)`);
    expect(forwarder.pkg.files).to.include('examples/eventrelay.config.json');
    expect(existsSync(join(ROOT, forwarder.dir, 'examples/eventrelay.config.json'))).to.equal(true);
  });

  it('package-lock.json holds no package whose engines exclude the Node the packages support (20.19): `npm ci` warns of none', () => {
    const supported = semver.minVersion(root.engines!.node!)!.version;
    expect(supported).to.equal('20.19.0');
    const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, { version?: string; engines?: unknown }> };
    const excluding = Object.entries(lock.packages)
      .filter(([, entry]) => {
        const node = (entry.engines as { node?: unknown } | undefined)?.node;
        return typeof node === 'string' && !semver.satisfies(supported, node);
      })
      .map(([path, entry]) => `${path}@${entry.version} (engines.node ${String((entry.engines as { node: string }).node)})`);
    expect(excluding).to.deep.equal([]);
  });
});
