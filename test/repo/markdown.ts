import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The repository root. */
export const ROOT = join(import.meta.dirname, '..', '..');

/**
 * The documentation a user reads, as paths from the root: the front door, what npm shows for
 * each package, and the guides.
 */
export function documentationFiles(): string[] {
  const packages = readdirSync(join(ROOT, 'packages'))
    .map((name) => `packages/${name}/README.md`)
    .filter((path) => existsSync(join(ROOT, path)));
  const docs = readdirSync(join(ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`);
  return ['README.md', ...packages.sort(), ...docs.sort()];
}

export function readDoc(path: string): string {
  return readFileSync(join(ROOT, path), 'utf8');
}

/** One fenced code block. */
export interface CodeBlock {
  /** The Markdown file, from the root. */
  readonly file: string;
  /** Line of the opening fence, from 1. */
  readonly line: number;
  /** The first word of the info string (`js`, `sh`, ...); empty when there is none. */
  readonly lang: string;
  /** The lines between the fences, each ending with a newline. */
  readonly code: string;
  /**
   * What the `<!-- snippet: ... -->` comment on the line above the fence (blank lines between
   * allowed) says, if there is one.
   */
  readonly marker: string | undefined;
}

const MARKER = /^<!-- snippet: (.*?) -->$/;

/** A line that closes a block opened with `fence`: the same character, at least as many times. */
function closingFence(fence: string): RegExp {
  return new RegExp(`^\\${fence[0]}{${fence.length},}\\s*$`);
}

/** Every fenced block of a Markdown file, in order. An unclosed fence is an error. */
export function codeBlocks(file: string, text = readDoc(file)): CodeBlock[] {
  const lines = text.split('\n');
  const blocks: CodeBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^(`{3,}|~{3,})\s*(\S*)/.exec(lines[i]!);
    if (!open) continue;
    const close = closingFence(open[1]!);
    let end = i + 1;
    while (end < lines.length && !close.test(lines[end]!)) end++;
    if (end >= lines.length) throw new Error(`${file}:${i + 1}: a code fence that is never closed`);
    let above = i - 1;
    while (above >= 0 && lines[above]!.trim() === '') above--;
    const marker = above >= 0 ? MARKER.exec(lines[above]!.trim())?.[1] : undefined;
    const body = lines.slice(i + 1, end);
    blocks.push({ file, line: i + 1, lang: open[2]!, code: body.map((l) => `${l}\n`).join(''), marker });
    i = end;
  }
  return blocks;
}

/** The text with the lines of its fenced blocks blanked out (links and headings in code are not read). */
export function withoutCode(text: string): string {
  let close: RegExp | undefined;
  return text
    .split('\n')
    .map((line) => {
      if (close !== undefined) {
        if (close.test(line)) close = undefined;
        return '';
      }
      const open = /^(`{3,}|~{3,})/.exec(line);
      if (open) close = closingFence(open[1]!);
      return open ? '' : line;
    })
    .join('\n');
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens. */
export function slug(heading: string): string {
  return heading
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\p{M}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

/** The anchors of a Markdown file's headings, with GitHub's `-1`, `-2` for repeats. */
export function anchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const result = new Set<string>();
  for (const match of withoutCode(text).matchAll(/^#{1,6} (.+)$/gm)) {
    const base = slug(match[1]!);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    result.add(count === 0 ? base : `${base}-${count}`);
  }
  return result;
}

/** The section under `heading` (a whole `## ...` line), up to the next heading of its level or above. */
export function section(text: string, heading: string): string {
  const level = /^#+/.exec(heading)![0].length;
  const lines = text.split('\n');
  const prose = withoutCode(text).split('\n');
  const start = prose.indexOf(heading);
  if (start < 0) return '';
  let end = start + 1;
  const stop = new RegExp(`^#{1,${level}} `);
  while (end < lines.length && !stop.test(prose[end]!)) end++;
  return lines.slice(start + 1, end).join('\n');
}
