import { describe, it } from 'mocha';
import { expect } from 'chai';
import { readFileSync } from 'node:fs';

const readme = readFileSync('README.md', 'utf8');
const bench = readFileSync('bench/README.md', 'utf8');
const section = /\n## Benchmarks\n([\s\S]*?)\n(?:<!-- section|## )/.exec(readme)?.[1] ?? '';

describe('README benchmarks', () => {
  it('shows only figures measured and recorded in bench/README.md', () => {
    const figures = [...section.matchAll(/\b\d[\d,]*(?:\.\d+)?(?=×| ms| µs|\/s| \||\))/g)].map((m) => m[0]);
    expect(figures.length).to.be.above(40);
    for (const figure of new Set(figures)) expect(bench, figure).to.contain(figure);
  });

  it('has one short table per benchmark, and bench/README.md glues no tables together', () => {
    const tables = (text: string) => text.split('\n').filter((line, i, lines) => line.startsWith('|') && !(lines[i - 1] ?? '').startsWith('|'));
    const headings = section.match(/^### /gm) ?? [];
    expect(tables(section)).to.have.length(headings.length);
    // A table header right after a table row would be two tables read as one.
    for (const [i, line] of bench.split('\n').entries()) {
      if (/^\|[-:| ]+\|$/.test(line)) expect(bench.split('\n')[i - 2] ?? '', `table at line ${i}`).not.to.match(/^\|/);
    }
  });
});
