import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'mocha';
import { expect } from 'chai';

const root = join(import.meta.dirname, '..', '..');

/** Every folder under src/, as `src/a/b/`. */
function sourceFolders(dir = 'src'): string[] {
  const folders = [`${dir}/`];
  for (const entry of readdirSync(join(root, dir), { withFileTypes: true })) {
    if (entry.isDirectory()) folders.push(...sourceFolders(`${dir}/${entry.name}`));
  }
  return folders;
}

/** The folders the README's architecture table names, in its first column. */
function documentedFolders(): string[] {
  const readme = readFileSync(join(root, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## Architecture'), readme.indexOf('\n## ', readme.indexOf('## Architecture') + 1));
  return [...section.matchAll(/^\| `(src\/[^`]*)` \|/gm)].map((m) => m[1]!);
}

describe('the README architecture section', () => {
  it('names every folder of src/ and nothing that is not there', () => {
    const documented = documentedFolders();
    expect(documented.length).to.be.greaterThan(5);
    const actual = sourceFolders().filter((f) => f !== 'src/');
    expect([...documented].sort()).to.deep.equal([...actual].sort());
  });
});
