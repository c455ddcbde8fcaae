import { describe, it } from 'mocha';
import { expect } from 'chai';
import { existsSync, statSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { anchors, documentationFiles, readDoc, ROOT, withoutCode } from './markdown';

/**
 * Guides other work is writing at the same time: the documentation links to them already. A link
 * to one of these may point at nothing yet; once the file exists it is checked like any other.
 */
const WRITTEN_ELSEWHERE = new Set(['docs/runtimes.md', 'docs/spool.md', 'docs/sources.md']);

/** The guides the front door must lead to, besides the two package READMEs. */
const GUIDES = [
  'docs/sending-events.md',
  'docs/receiving-webhooks.md',
  'docs/migrating-from-segment.md',
  'docs/running-the-forwarder.md',
  'docs/operating-the-forwarder.md',
  'docs/benchmarks.md',
  'docs/runtimes.md',
  'docs/spool.md',
  'docs/sources.md',
  'docs/tracing.md',
  'docs/source-schema.md',
  'docs/architecture.md',
  'docs/forwarder-reference.md',
  'docs/sdk-reference.md',
];

/** Every relative link of a Markdown file (images too), outside code, as `[target, anchor]` from the root. */
function links(file: string): { target: string; anchor: string | undefined; text: string }[] {
  const found: { target: string; anchor: string | undefined; text: string }[] = [];
  for (const match of withoutCode(readDoc(file)).matchAll(/!?\[[^\]]*\]\(([^)\s]+)\)/g)) {
    const href = match[1]!;
    if (/^[a-z]+:/i.test(href)) continue;
    const [path, anchor] = href.split('#') as [string, string | undefined];
    const target = path === '' ? file : normalize(join(dirname(file), path)).replace(/\\/g, '/');
    found.push({ target, anchor, text: match[0] });
  }
  return found;
}

describe('the documentation', () => {
  const files = documentationFiles();

  it('has the front door, both package READMEs and the guides', () => {
    for (const file of ['README.md', 'packages/eventrelay/README.md', 'packages/forwarder/README.md', ...GUIDES]) {
      if (WRITTEN_ELSEWHERE.has(file)) continue;
      expect(files, file).to.include(file);
    }
  });

  it('keeps the root README to 300 lines at most', () => {
    const lines = readDoc('README.md').split('\n');
    if (lines.at(-1) === '') lines.pop();
    expect(lines.length).to.be.at.most(300);
  });

  it('the root README links to both package READMEs and every guide', () => {
    const targets = new Set(links('README.md').map((l) => l.target));
    for (const file of ['packages/eventrelay/README.md', 'packages/forwarder/README.md', ...GUIDES]) expect(targets.has(file), file).to.equal(true);
  });

  it('every relative link points at a file that exists, and every anchor at a heading of it', () => {
    const broken: string[] = [];
    for (const file of files) {
      for (const { target, anchor, text } of links(file)) {
        if (!existsSync(join(ROOT, target))) {
          if (!WRITTEN_ELSEWHERE.has(target)) broken.push(`${file}: ${text} (no ${target})`);
          continue;
        }
        if (anchor === undefined || !target.endsWith('.md') || statSync(join(ROOT, target)).isDirectory()) continue;
        if (!anchors(readDoc(target)).has(anchor)) broken.push(`${file}: ${text} (no heading #${anchor} in ${target})`);
      }
    }
    expect(broken).to.deep.equal([]);
  });

  it('names the packages as they are published (no `eventrelay/forwarder`), and every path it shows exists', () => {
    const stale: string[] = [];
    for (const file of files) {
      for (const [i, line] of readDoc(file).split('\n').entries()) {
        if (/(?<!@)eventrelay\/forwarder\b/.test(line)) stale.push(`${file}:${i + 1}: eventrelay/forwarder`);
        // Paths of Segment's repositories, quoted where their tests are named, are not ours.
        if (line.includes('segmentio/')) continue;
        for (const [, path] of line.matchAll(/`((?:src|dist|test|packages|examples|bench|docs|\.ci)\/[^\s`*]+)`/g)) {
          // The one built path shown, inside the published forwarder (built, so not in a clone).
          if (path === 'dist/debugger/' && line.includes('`dist/debugger/` of `@eventrelay/forwarder`')) continue;
          // A package README may speak from its package (what npm shows); everything may name a path from the root.
          const found = existsSync(join(ROOT, path!)) || (file.startsWith('packages/') && existsSync(join(ROOT, dirname(file), path!)));
          if (!found) stale.push(`${file}:${i + 1}: ${path} does not exist`);
        }
      }
    }
    expect(stale).to.deep.equal([]);
  });
});
