import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'mocha';
import { expect } from 'chai';

const root = join(import.meta.dirname, '..', '..');

/** Every folder under a package's src/, as `packages/x/src/a/`, with its number of files. */
function sourceFolders(dir: string): { folder: string; files: number }[] {
  const entries = readdirSync(join(root, dir), { withFileTypes: true });
  const here = { folder: `${dir}/`, files: entries.filter((e) => e.isFile()).length };
  return [here, ...entries.filter((e) => e.isDirectory()).flatMap((e) => sourceFolders(`${dir}/${e.name}`))];
}

const folders = ['packages/eventrelay/src', 'packages/forwarder/src'].flatMap((dir) => sourceFolders(dir));

/** The folders docs/architecture.md names, in the first column of its tables. */
function documentedFolders(): string[] {
  const text = readFileSync(join(root, 'docs', 'architecture.md'), 'utf8');
  return [...text.matchAll(/^\| `(packages\/[^`]*)` \|/gm)].map((m) => m[1]!);
}

describe('the source layout (docs/architecture.md)', () => {
  it('names every source folder of both packages and nothing that is not there', () => {
    const documented = documentedFolders();
    expect(documented.length).to.be.greaterThan(10);
    expect([...documented].sort()).to.deep.equal(folders.map((f) => f.folder).sort());
  });

  it('keeps every source folder at 12 files or fewer, one concern each', () => {
    const crowded = folders.filter((f) => f.files > 12).map((f) => `${f.folder} (${f.files})`);
    expect(crowded).to.deep.equal([]);
  });

  it('gives each package its own test tree beside its src/', () => {
    for (const pkg of ['eventrelay', 'forwarder']) {
      const tree = readdirSync(join(root, 'packages', pkg, 'test'));
      expect(tree, `packages/${pkg}/test`).to.include.members(['unit', 'integration']);
    }
  });
});
