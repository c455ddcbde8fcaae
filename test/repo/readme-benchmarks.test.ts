import { describe, it } from 'mocha';
import { expect } from 'chai';
import { readDoc, section, withoutCode } from './markdown';

// bench/README.md is where every benchmark figure is measured and recorded; the documentation
// only copies from it.
const bench = readDoc('bench/README.md');

/** Every number of a text: `1,017`, `0.78`, `10.31`, `2`. */
function figures(text: string): string[] {
  return [...new Set(text.match(/\d+(?:,\d{3})*(?:\.\d+)?/g) ?? [])];
}

/** The top-level tables of a text: their first lines. */
function tables(text: string): string[] {
  return text.split('\n').filter((line, i, lines) => line.startsWith('|') && !(lines[i - 1] ?? '').startsWith('|'));
}

describe('benchmark figures in the documentation', () => {
  const places: [string, string, number][] = [
    ['README.md', section(readDoc('README.md'), '## Benchmarks'), 10],
    ['packages/eventrelay/README.md', section(readDoc('packages/eventrelay/README.md'), '## Benchmarks'), 10],
    ['packages/forwarder/README.md', section(readDoc('packages/forwarder/README.md'), '## Benchmarks'), 10],
    ['docs/benchmarks.md', withoutCode(readDoc('docs/benchmarks.md')), 100],
    ['docs/migrating-from-segment.md', section(readDoc('docs/migrating-from-segment.md'), '## What the layers cost'), 10],
  ];

  for (const [file, text, least] of places) {
    it(`${file} shows only figures measured and recorded in bench/README.md`, () => {
      const shown = figures(text);
      expect(shown.length, `${file}: the benchmark figures`).to.be.at.least(least);
      expect(shown.filter((figure) => !bench.includes(figure))).to.deep.equal([]);
    });
  }

  for (const file of ['README.md', 'packages/eventrelay/README.md', 'packages/forwarder/README.md']) {
    it(`${file} keeps one short headline table`, () => {
      const headline = section(readDoc(file), '## Benchmarks');
      expect(tables(headline)).to.have.length(1);
      expect(headline.split('\n').filter((line) => line.startsWith('|')).length).to.be.at.most(8);
    });
  }

  it('docs/benchmarks.md has one table per benchmark, and bench/README.md glues no tables together', () => {
    const page = withoutCode(readDoc('docs/benchmarks.md'));
    expect(tables(page)).to.have.length((page.match(/^## /gm) ?? []).length);
    // A table header right after a table row would be two tables read as one.
    for (const [i, line] of bench.split('\n').entries()) {
      if (/^\|[-:| ]+\|$/.test(line)) expect(bench.split('\n')[i - 2] ?? '', `table at line ${i}`).not.to.match(/^\|/);
    }
  });
});
