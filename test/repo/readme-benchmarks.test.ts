import { describe, it } from 'mocha';
import { expect } from 'chai';
import { readDoc, section, withoutCode } from './markdown';

// bench/results.json holds the current figure of every benchmark (the scripts record theirs with
// BENCH_WRITE_RESULTS=1); bench/README.md and the documentation only show figures from it.
interface Entry {
  readonly date: string;
  readonly machine: string;
  readonly versions?: Record<string, string>;
  readonly rows?: Record<string, Record<string, unknown>>;
  readonly [key: string]: unknown;
}
const results = JSON.parse(readDoc('bench/results.json')) as Record<string, Entry>;
const bench = readDoc('bench/README.md');

/** Every number of a text outside code: `1,017`, `0.78`, `10.31`, `2`; not the 50 of a name like p50. */
function figures(text: string): string[] {
  const prose = withoutCode(text).replace(/`[^`\n]*`/g, ' ');
  return [...new Set(prose.match(/(?<![\w.])\d+(?:,\d{3})*(?:\.\d+)?/g) ?? [])];
}

/** What an entry allows a page to show: its numbers, and the numbers its date, machine, versions and row names spell. */
function allowed(entries: Entry[]): { numbers: number[]; words: Set<string> } {
  const numbers: number[] = [];
  const walk = (value: unknown): void => {
    if (typeof value === 'number') numbers.push(value);
    else if (Array.isArray(value)) value.forEach(walk);
    else if (value !== null && typeof value === 'object') Object.values(value).forEach(walk);
  };
  const words = new Set<string>();
  for (const entry of entries) {
    walk(entry);
    const spelled = [entry.date, entry.machine, ...Object.values(entry.versions ?? {}), ...Object.keys(entry.rows ?? {})];
    for (const text of spelled) for (const word of text.match(/\d+(?:,\d{3})*(?:\.\d+)?/g) ?? []) words.add(word);
  }
  return { numbers, words };
}

/**
 * Whether `shown` is one of the numbers as it would be printed: with thousands separators and the
 * decimals shown. A figure shown with two decimals or more may round a finer one (1.431 as 1.43);
 * whole numbers and one decimal must be the value itself.
 */
function recorded(shown: string, { numbers, words }: ReturnType<typeof allowed>): boolean {
  if (words.has(shown)) return true;
  const digits = shown.split('.')[1]?.length ?? 0;
  return numbers.some((value) => {
    const decimals = String(value).split('.')[1]?.length ?? 0;
    if (decimals > digits && digits < 2) return false;
    return value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits }) === shown;
  });
}

const everything = allowed(Object.values(results));

/** The top-level tables of a text: their first lines. */
function tables(text: string): string[] {
  return text.split('\n').filter((line, i, lines) => line.startsWith('|') && !(lines[i - 1] ?? '').startsWith('|'));
}

/** bench/README.md's tables, each with the results.json entries its `<!-- results: a, b -->` line above names. */
function benchTables(): { line: number; keys: string[]; rows: string[] }[] {
  const lines = withoutCode(bench).split('\n');
  const found = [];
  for (let i = 0; i < lines.length; i++) {
    if (!lines[i]!.startsWith('|') || (lines[i - 1] ?? '').startsWith('|')) continue;
    let above = i - 1;
    while (above >= 0 && lines[above]!.trim() === '') above--;
    const tag = /^<!-- results: (.+) -->$/.exec(lines[above] ?? '');
    let end = i;
    while (end < lines.length && lines[end]!.startsWith('|')) end++;
    found.push({ line: i + 1, keys: tag ? tag[1]!.split(',').map((k) => k.trim()) : [], rows: lines.slice(i, end) });
  }
  return found;
}

describe('benchmark figures in the documentation', () => {
  it('bench/results.json holds, for every entry, its date, the machine and figures', () => {
    expect(Object.keys(results).length).to.be.at.least(10);
    for (const [key, entry] of Object.entries(results)) {
      expect(entry.date, key).to.match(/^\d{4}-\d{2}-\d{2}$/);
      expect(entry.machine, key).to.be.a('string').and.not.be.empty;
      expect(allowed([entry]).numbers.length, key).to.be.at.least(2);
    }
  });

  const places: [string, string, number][] = [
    ['README.md', section(readDoc('README.md'), '## Benchmarks'), 10],
    ['packages/eventrelay/README.md', section(readDoc('packages/eventrelay/README.md'), '## Benchmarks'), 10],
    ['packages/forwarder/README.md', section(readDoc('packages/forwarder/README.md'), '## Benchmarks'), 10],
    ['docs/benchmarks.md', readDoc('docs/benchmarks.md'), 100],
    ['docs/migrating-from-segment.md', section(readDoc('docs/migrating-from-segment.md'), '## What the layers cost'), 10],
  ];

  for (const [file, text, least] of places) {
    it(`${file} shows only figures recorded in bench/results.json`, () => {
      const shown = figures(text);
      expect(shown.length, `${file}: the benchmark figures`).to.be.at.least(least);
      expect(shown.filter((figure) => !recorded(figure, everything))).to.deep.equal([]);
    });
  }

  it("bench/README.md's tables show the figures of the results.json entries they name, and name every entry", () => {
    const named = new Set<string>();
    for (const table of benchTables()) {
      const shown = table.rows.flatMap(figures);
      if (shown.length === 0) continue;
      expect(table.keys, `bench/README.md:${table.line}: a table of figures says which entries it shows`).not.to.be.empty;
      for (const key of table.keys) {
        expect(results, `bench/README.md:${table.line}`).to.have.property(key);
        named.add(key);
      }
      const theirs = allowed(table.keys.map((key) => results[key]!));
      expect(shown.filter((figure) => !recorded(figure, theirs)), `bench/README.md:${table.line}`).to.deep.equal([]);
    }
    expect(Object.keys(results).filter((key) => !named.has(key))).to.deep.equal([]);
  });

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
