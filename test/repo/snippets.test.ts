/**
 * Every fenced code block of README.md, packages/*\/README.md and docs/*.md is run or checked
 * against the real packages, so that no snippet goes stale:
 *
 * - `js` and `ts` blocks are type-checked with the repository's TypeScript against the packages'
 *   sources (`eventrelay` through its `eventrelay-source` export condition, `@eventrelay/forwarder`
 *   mapped to its `src/index.ts`): JS as checkJs (not strict, as a JS user would write it), TS
 *   strict. A CommonJS block (`require(...)`) must be run instead: the sources checked here are the
 *   ES module entries, and `require('eventrelay/analytics-node')` returns the class only from the build.
 * - `json` blocks are parsed; a forwarder config (one with `sources`, or a fragment marked
 *   `config at ...`) is checked as `eventrelay check` checks it.
 * - `sh` blocks: each command must exist (npm scripts, workspace and dependency names for
 *   `npm install`, `eventrelay` subcommands and flags from `eventrelay --help`, files for `cp`,
 *   `node` and `bash`), and a config a block copies must get every secret it reads from the block's
 *   `export`s.
 * - `text` and `http` blocks need a marker naming the check against the real thing.
 *
 * Markers are HTML comments on the line above a fence, `<!-- snippet: KIND ... -->` (invisible on
 * GitHub and npm):
 *
 * | kind | check |
 * |---|---|
 * | `run[, prints "TEXT"]` | js: also run with node (the built packages) against a local ingestion sink given as
 * |  | `EVENTRELAY_ENDPOINT` and `EVENTRELAY_WRITE_KEY`; it must exit 0 and deliver one message per call it makes (and print TEXT) |
 * | `example FILE` | js: the block is FILE after its header comment, line for line, and FILE is run by `examples-webhooks.test.ts` |
 * | `signatures MODULE` | ts: each `declare function f` has the type of MODULE's export `f` (assignable both ways) |
 * | `config at top level` / `config at PATH` | json: a fragment of a forwarder config, checked in a minimal config at PATH |
 * | `ingest-answer` | json: the answer of a real forwarder to a batch of a valid track and a track without `event` |
 * | `webhook-message` | json: `parseWebhookMessage` accepts it as it is |
 * | `notice` | json: an `endpoint.disabled` notice, as the forwarder makes it from the run of failures its `reason` tells |
 * | `webhook-request secret=S` | http: what `WebhookDestination` sends for the body shown, header for header and byte for byte |
 * | `batch-request` | http: what `Analytics` sends for the calls in the body shown (`sentAt` aside), header for header and byte for byte |
 * | `config-error FIELD=VALUE` | text: what `eventrelay check` prints for a config whose FIELD is VALUE |
 * | `admin-curl` | sh: each `curl` is sent (method, headers, body) to a real forwarder's admin API and must get a 2xx |
 * | `browser NAME` | js, html: run in Chromium by packages/forwarder/test/integration/web-browser.test.ts |
 * |  | (Segment's analytics.js against a real forwarder) |
 * | `mobile NAME` | swift, kotlin, js: compared with a real forwarder by packages/forwarder/test/integration/mobile.test.ts |
 * |  | (the URLs the library builds, its wire format) |
 * | `quick-start` | sh: run as written in an empty folder by packages/forwarder/test/integration/quick-start.test.ts |
 * | `unchecked: REASON` | nothing: a drawing, say; the reason is required |
 */
import { describe, it, before, after } from 'mocha';
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { codeBlocks, documentationFiles, ROOT } from './markdown';
import type { CodeBlock } from './markdown';
import { startSink } from '../helpers/sink';
import type { ReceivedRequest, Sink } from '../helpers/sink';
import { Analytics } from '../../packages/eventrelay/src/index';
import { parseWebhookMessage } from '../../packages/eventrelay/src/webhooks/index';
import { createForwarder, MemoryStore, toWebhookMessage, WebhookDestination } from '../../packages/forwarder/src/index';
import type { ForwarderConfig, InboundMessage } from '../../packages/forwarder/src/index';
import { applyReport } from '../../packages/forwarder/src/store/endpoint-state';
import { endpointNotice } from '../../packages/forwarder/src/delivery/notify';

const LANGUAGES = new Set(['js', 'ts', 'json', 'sh', 'text', 'http', 'html', 'swift', 'kotlin']);
const CLI = ['--import', 'tsx', '--conditions=eventrelay-source', join(ROOT, 'packages/forwarder/src/cli/cli.ts')];
const WRITE_KEY = 'snippet-write-key';
const ADMIN_TOKEN = 'snippet-admin-token';

const blocks = documentationFiles().flatMap((file) => codeBlocks(file));
const where = (block: CodeBlock): string => `${block.file}:${block.line}`;
const kind = (block: CodeBlock): string => block.marker?.split(/[\s,:]/)[0] ?? '';
const isCommonJs = (block: CodeBlock): boolean => /\brequire\(/.test(block.code);

interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

function run(file: string, args: readonly string[], env: NodeJS.ProcessEnv = {}): Promise<Run> {
  return new Promise((resolve) => {
    execFile(file, args, { cwd: ROOT, env: { ...process.env, DEBUG: '', ...env }, timeout: 60_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : null) : 0, stdout, stderr });
    });
  });
}

// --- Shell words ---------------------------------------------------------------------------

/** A shell command line cut into commands of words: quotes, `$NAME` in double quotes, `\` newlines, `#` comments. */
function shellCommands(code: string, env: Readonly<Record<string, string>> = {}): string[][] {
  const commands: string[][] = [[]];
  let word: string | undefined;
  const text = code.replace(/\\\n/g, ' ');
  const end = (): void => {
    if (word !== undefined) commands[commands.length - 1]!.push(word);
    word = undefined;
  };
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === "'") {
      const close = text.indexOf("'", i + 1);
      word = (word ?? '') + text.slice(i + 1, close);
      i = close;
    } else if (c === '"') {
      let value = '';
      for (i++; text[i] !== '"'; i++) {
        const name = text[i] === '$' ? /^\$([A-Z_][A-Z0-9_]*)/.exec(text.slice(i))?.[1] : undefined;
        if (name === undefined) value += text[i];
        else {
          value += env[name] ?? `$${name}`;
          i += name.length;
        }
      }
      word = (word ?? '') + value;
    } else if (c === '#' && word === undefined) {
      i = text.indexOf('\n', i) - 1;
      if (i < 0) break;
    } else if (c === '\n' || c === ';' || c === '|' || (c === '&' && text[i + 1] === '&')) {
      end();
      if (c === '&' || (c === '|' && text[i + 1] === '|')) i++;
      commands.push([]);
    } else if (c === ' ' || c === '\t') end();
    else word = (word ?? '') + c;
  }
  end();
  return commands.filter((command) => command.length > 0);
}

// --- What exists ---------------------------------------------------------------------------

interface PackageJson {
  name: string;
  scripts?: Record<string, string>;
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  files?: string[];
}

const readJson = <T>(path: string): T => JSON.parse(readFileSync(join(ROOT, path), 'utf8')) as T;
const rootPackage = readJson<PackageJson>('package.json');
const workspaces: Record<string, PackageJson & { dir: string }> = Object.fromEntries(
  ['packages/eventrelay', 'packages/forwarder'].map((dir) => {
    const pkg = readJson<PackageJson>(`${dir}/package.json`);
    return [pkg.name, { ...pkg, dir }];
  }),
);

/** Names `npm install` may be given in the documentation: the workspaces, and what they or the repository depend on. */
const installable = new Set([
  ...Object.keys(workspaces),
  ...[rootPackage, ...Object.values(workspaces)].flatMap((pkg) => [
    ...Object.keys(pkg.dependencies ?? {}),
    ...Object.keys(pkg.devDependencies ?? {}),
    ...Object.keys(pkg.peerDependencies ?? {}),
  ]),
]);

/** `eventrelay --help`, read once: subcommand → the flags its usage line names (global flags under ''). */
let cliUsage: Map<string, Set<string>> | undefined;
async function usage(): Promise<Map<string, Set<string>>> {
  if (cliUsage) return cliUsage;
  const help = await run(process.execPath, [...CLI, '--help']);
  expect(help.code, help.stderr).to.equal(0);
  const map = new Map<string, Set<string>>([['', new Set()]]);
  for (const line of help.stdout.split('\n')) {
    const command = /^ {2}eventrelay ([a-z]+) (.*)$/.exec(line);
    if (command) map.set(command[1]!, new Set(command[2]!.match(/--[a-z-]+/g) ?? []));
    const global = /^ {2}eventrelay (--.*)$/.exec(line);
    if (global) for (const flag of global[1]!.match(/--[a-z-]+/g) ?? []) map.get('')!.add(flag);
    const option = /^ +(?:-[a-z], )?(--[a-z-]+)/.exec(line);
    if (option && !line.trimStart().startsWith('eventrelay')) map.get('')!.add(option[1]!);
  }
  cliUsage = map;
  return map;
}

/** Checks one `eventrelay ...` command line against `eventrelay --help`. */
async function checkCli(words: readonly string[], label: string): Promise<void> {
  const map = await usage();
  const [sub, ...rest] = words;
  if (sub!.startsWith('--')) {
    expect(map.get('')!.has(sub!), `${label}: eventrelay ${sub} is not in eventrelay --help`).to.equal(true);
    return;
  }
  expect(map.has(sub!), `${label}: eventrelay ${sub} is not a command of eventrelay --help`).to.equal(true);
  for (const word of rest.filter((w) => w.startsWith('--'))) {
    const flag = word.split('=')[0]!;
    expect(map.get(sub!)!.has(flag) || map.get('')!.has(flag), `${label}: eventrelay ${sub} has no ${flag} in eventrelay --help`).to.equal(true);
  }
}

/** A file a command names, from the root, or what `node_modules/<workspace>/...` is in the repository. */
function repositoryPath(path: string): string {
  for (const [name, pkg] of Object.entries(workspaces)) {
    const prefix = `node_modules/${name}/`;
    if (path.startsWith(prefix)) {
      const inside = path.slice(prefix.length);
      expect(pkg.files ?? [], `${path}: not in the files ${name} publishes`).to.satisfy((files: string[]) => files.some((f) => inside === f || inside.startsWith(`${f}/`)));
      return join(pkg.dir, inside);
    }
  }
  return path;
}

// --- Forwarder configs ---------------------------------------------------------------------

/** The `{ "env": NAME }` names a config reads. */
function envNames(value: unknown, names = new Set<string>()): Set<string> {
  if (Array.isArray(value)) for (const item of value) envNames(item, names);
  else if (typeof value === 'object' && value !== null) {
    const env = (value as { env?: unknown }).env;
    if (typeof env === 'string' && Object.keys(value).length === 1) names.add(env);
    else for (const item of Object.values(value)) envNames(item, names);
  }
  return names;
}

/** A value for each secret a config reads: URLs where a URL goes, words elsewhere. */
function fakeEnv(names: Iterable<string>): Record<string, string> {
  return Object.fromEntries([...names].map((name) => [name, /URL/.test(name) ? 'postgres://eventrelay:secret@127.0.0.1:5432/events' : `value-of-${name.toLowerCase()}`]));
}

/** Checks a config as `eventrelay check` does: the forwarder is built (nothing opened) and closed; throws its ConfigError. */
async function checkConfig(config: unknown, env: Record<string, string>): Promise<void> {
  const forwarder = createForwarder(config as ForwarderConfig, { env });
  await forwarder.close();
}

const baseSource = { name: 'web', writeKey: WRITE_KEY };

/** Puts `value` at `path` (`sources[0].destinations`) of `target`. */
function setPath(target: Record<string, unknown>, path: string, value: unknown): void {
  const keys = path.split(/\.|\[(\d+)\]/).filter((k) => k !== undefined && k !== '');
  let node = target as Record<string, unknown>;
  for (const [i, key] of keys.entries()) {
    if (i === keys.length - 1) node[key] = value;
    else {
      node[key] ??= /^\d+$/.test(keys[i + 1]!) ? [] : {};
      node = node[key] as Record<string, unknown>;
    }
  }
}

// --- The tests -----------------------------------------------------------------------------

describe('documentation code blocks (README.md, packages/*/README.md, docs/*.md)', function () {
  this.timeout(120_000);

  it('finds the blocks of every documentation file, each in a known language, each marker known', () => {
    expect(blocks.length).to.be.above(40);
    const known = new Set(['run', 'example', 'signatures', 'config', 'ingest-answer', 'webhook-message', 'notice', 'webhook-request', 'batch-request', 'config-error', 'admin-curl', 'browser', 'mobile', 'quick-start', 'unchecked']);
    for (const block of blocks) {
      expect(LANGUAGES.has(block.lang), `${where(block)}: a block in "${block.lang}"; use one of ${[...LANGUAGES].join(', ')}`).to.equal(true);
      if (block.marker !== undefined) expect(known.has(kind(block)), `${where(block)}: unknown marker "${block.marker}"`).to.equal(true);
    }
  });

  it('a block that is not checked says why', () => {
    const unchecked = blocks.filter((b) => kind(b) === 'unchecked');
    for (const block of unchecked) expect(/^unchecked: .{20,}/.test(block.marker!), `${where(block)}: say why it cannot be checked`).to.equal(true);
    // Few, and none of them code.
    expect(unchecked.length).to.be.below(5);
    for (const block of unchecked) expect(block.lang, where(block)).to.equal('text');
  });

  describe('js and ts blocks type-check against the packages', () => {
    // A mobile block imports a library that runs on a device only (React Native): compared, not type-checked.
    const typed = blocks.filter((b) => (b.lang === 'js' || b.lang === 'ts') && kind(b) !== 'example' && kind(b) !== 'mobile' && !isCommonJs(b));
    let dir = '';
    const files = new Map<CodeBlock, string>();
    const diagnostics = new Map<CodeBlock, string[]>();

    before(function () {
      this.timeout(180_000);
      mkdirSync(join(ROOT, '.tmp'), { recursive: true });
      // Inside the repository, so that `eventrelay` resolves through its node_modules as for a user.
      dir = mkdtempSync(join(ROOT, '.tmp', 'snippets-'));
      for (const [i, block] of typed.entries()) {
        let code = block.code;
        const signatures = /^signatures (\S+)$/.exec(block.marker ?? '');
        if (signatures) {
          for (const [, name] of code.matchAll(/^declare function (\w+)/gm)) {
            code += `import { ${name} as real_${name} } from '${signatures[1]}';\n`;
            code += `export const same_${name}: [typeof real_${name}, typeof ${name}] = [${name}, real_${name}];\n`;
          }
        }
        const file = join(dir, `block-${i}.${block.lang === 'ts' ? 'ts' : 'mjs'}`);
        writeFileSync(file, `${code}export {};\n`);
        files.set(block, file);
      }
      const common: ts.CompilerOptions = {
        target: ts.ScriptTarget.ES2022,
        module: ts.ModuleKind.ESNext,
        moduleResolution: ts.ModuleResolutionKind.Bundler,
        lib: ['lib.es2023.d.ts'],
        types: ['node'],
        typeRoots: [join(ROOT, 'node_modules/@types')],
        customConditions: ['eventrelay-source'],
        paths: { '@eventrelay/forwarder': [join(ROOT, 'packages/forwarder/src/index.ts')] },
        esModuleInterop: true,
        skipLibCheck: true,
        noEmit: true,
      };
      const programs: [CodeBlock[], ts.CompilerOptions][] = [
        [typed.filter((b) => b.lang === 'js' && kind(b) !== 'browser'), { ...common, allowJs: true, checkJs: true, strict: false }],
        // Code for a web page: the DOM's types too.
        [typed.filter((b) => b.lang === 'js' && kind(b) === 'browser'), { ...common, lib: ['lib.es2023.d.ts', 'lib.dom.d.ts'], allowJs: true, checkJs: true, strict: false }],
        [typed.filter((b) => b.lang === 'ts'), { ...common, strict: true }],
      ];
      for (const [group, options] of programs) {
        const program = ts.createProgram(group.map((b) => files.get(b)!), options);
        for (const block of group) {
          const source = program.getSourceFile(files.get(block)!)!;
          const found = [...program.getSyntacticDiagnostics(source), ...program.getSemanticDiagnostics(source)];
          diagnostics.set(
            block,
            found.map((d) => {
              const line = d.start === undefined ? 0 : source.getLineAndCharacterOfPosition(d.start).line;
              return `${block.file}:${block.line + 1 + line}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`;
            }),
          );
        }
      }
    });

    after(() => {
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    it('has blocks to check, and a declaration list is compared with the real exports', () => {
      expect(typed.length).to.be.above(15);
      expect(typed.filter((b) => kind(b) === 'signatures')).to.have.length.above(1);
    });

    for (const block of typed) {
      it(`${where(block)} (${block.lang})`, () => {
        expect(diagnostics.get(block), where(block)).to.deep.equal([]);
      });
    }
  });

  describe('blocks marked run: run with node against a local ingestion sink (the built packages)', () => {
    let dir = '';
    before(function () {
      if (!existsSync(join(ROOT, 'packages/eventrelay/dist/index.js'))) {
        throw new Error('packages/eventrelay/dist is missing: run `npm run build` first (npm test does)');
      }
      mkdirSync(join(ROOT, '.tmp'), { recursive: true });
      dir = mkdtempSync(join(ROOT, '.tmp', 'snippets-run-'));
    });
    after(() => {
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    it('CommonJS blocks are run (their declarations cannot describe require())', () => {
      for (const block of blocks.filter((b) => b.lang === 'js' && isCommonJs(b))) expect(kind(block), where(block)).to.equal('run');
    });

    for (const [i, block] of blocks.filter((b) => kind(b) === 'run').entries()) {
      it(`${where(block)}`, async () => {
        expect(block.lang).to.equal('js');
        const sink: Sink = await startSink();
        try {
          const file = join(dir, `run-${i}.${isCommonJs(block) ? 'cjs' : 'mjs'}`);
          writeFileSync(file, block.code);
          const result = await run(process.execPath, [file], { EVENTRELAY_ENDPOINT: sink.url, EVENTRELAY_WRITE_KEY: WRITE_KEY });
          expect(result.code, `${where(block)} exited with ${result.code}: ${result.stderr}`).to.equal(0);
          expect(result.stderr, where(block)).to.equal('');
          const calls = [...block.code.matchAll(/\banalytics\.(identify|track|page|screen|group|alias)\(/g)].map((m) => m[1]);
          expect(calls.length, `${where(block)} makes no call`).to.be.above(0);
          expect(sink.messages().map((m) => m.type)).to.deep.equal(calls);
          for (const request of sink.requests) {
            expect(request.headers.authorization).to.equal(`Basic ${Buffer.from(`${WRITE_KEY}:`).toString('base64')}`);
          }
          const prints = /prints "([^"]+)"/.exec(block.marker!)?.[1];
          if (prints !== undefined) expect(result.stdout).to.contain(prints);
        } finally {
          await sink.close();
        }
      });
    }
  });

  describe('html, swift and kotlin blocks are run in a browser or compared with the forwarder', () => {
    const runners: Record<string, string> = {
      browser: 'packages/forwarder/test/integration/web-browser.test.ts',
      mobile: 'packages/forwarder/test/integration/mobile.test.ts',
    };
    for (const block of blocks.filter((b) => ['html', 'swift', 'kotlin'].includes(b.lang) || kind(b) === 'browser' || kind(b) === 'mobile')) {
      it(`${where(block)}`, () => {
        const runner = runners[kind(block)];
        expect(runner, `${where(block)}: a ${block.lang} block must be marked browser NAME or mobile NAME`).to.be.a('string');
        // The runner reads the blocks of its guide by marker and fails on one it does not expect.
        const source = readFileSync(join(ROOT, runner!), 'utf8');
        expect(source).to.contain(`'${block.file}'`);
        expect(source).to.contain(`'${block.marker}'`);
      });
    }
  });

  describe('blocks marked example are the example files the examples test runs', () => {
    const runner = readFileSync(join(ROOT, 'packages/eventrelay/test/integration/examples-webhooks.test.ts'), 'utf8');
    for (const block of blocks.filter((b) => kind(b) === 'example')) {
      it(`${where(block)}`, () => {
        const file = /^example (\S+)$/.exec(block.marker!)![1]!;
        const code = readFileSync(join(ROOT, file), 'utf8').replace(/^(\/\/.*\n)+/, '');
        expect(block.code).to.equal(code);
        expect(runner).to.contain(`'${file}'`);
      });
    }
  });

  describe('json blocks parse, and forwarder configs pass `eventrelay check`', () => {
    for (const block of blocks.filter((b) => b.lang === 'json')) {
      it(`${where(block)}${block.marker ? ` (${block.marker})` : ''}`, async () => {
        const at = /^config at (.+)$/.exec(block.marker ?? '')?.[1];
        const value: unknown = JSON.parse(at === undefined ? block.code : `{${block.code}}`);
        if (at !== undefined) {
          const config: Record<string, unknown> = { sources: [{ ...baseSource }] };
          if (at === 'top level') Object.assign(config, value);
          else setPath(config, at, value);
          await checkConfig(config, fakeEnv(envNames(config)));
        } else if (block.marker === 'notice') {
          // The disabled state the block tells of (attempts, since when, until `at`), through the rule's own code.
          const shown = value as { source: string; url: string; at: string; lastError: string; reason: string };
          const [, attempts, since] = /\((\d+) attempts since (\S+)\)/.exec(shown.reason) ?? [];
          const report = { source: shown.source, key: 'k', url: shown.url, reset: false, failures: Number(attempts), firstFailureAt: Date.parse(since!), lastFailureAt: Date.parse(shown.at), lastError: shown.lastError };
          const { state, disabled } = applyReport(undefined, report, { after: 86_400_000, minAttempts: 10 });
          expect(disabled, where(block)).to.equal(true);
          expect(endpointNotice({ type: 'endpoint.disabled', state, at: Date.parse(shown.at) })).to.deep.equal(value);
        } else if (block.marker === 'webhook-message') {
          expect(parseWebhookMessage(block.code)).to.deep.equal(value);
        } else if (block.marker === 'ingest-answer') {
          const forwarder = createForwarder({ storage: { type: 'memory' }, sources: [{ ...baseSource }] }, { store: new MemoryStore() });
          try {
            const { url } = await forwarder.listen({ port: 0, host: '127.0.0.1' });
            const response = await fetch(`${url}/v1/batch`, {
              method: 'POST',
              headers: { 'content-type': 'application/json', authorization: `Basic ${Buffer.from(`${WRITE_KEY}:`).toString('base64')}` },
              body: JSON.stringify({ batch: [{ type: 'track', userId: 'user-42', event: 'Order Completed' }, { type: 'track', userId: 'user-42' }] }),
            });
            expect(response.status).to.equal(200);
            expect(await response.json()).to.deep.equal(value);
          } finally {
            await forwarder.close();
          }
        } else {
          expect(block.marker, `${where(block)}: a json block without a check; mark it`).to.equal(undefined);
          expect(value, `${where(block)}: not a forwarder config (no "sources"); mark what it is`).to.have.property('sources');
          await checkConfig(value, fakeEnv(envNames(value)));
        }
      });
    }
  });

  describe('sh blocks name commands that exist', () => {
    for (const block of blocks.filter((b) => b.lang === 'sh')) {
      it(`${where(block)}`, async () => {
        const exported = new Set<string>();
        const copied = new Map<string, string>();
        const configs: string[] = [];
        for (const command of shellCommands(block.code)) {
          const words = [...command];
          while (/^[A-Z_][A-Z0-9_]*=/.test(words[0] ?? '')) exported.add(words.shift()!.split('=')[0]!);
          const [tool, ...args] = words;
          const label = `${where(block)}: ${command.join(' ')}`;
          if (tool === 'npm') {
            const prefix = args[0] === '--prefix' ? args.splice(0, 2)[1]! : '.';
            const pkg = readJson<PackageJson>(join(prefix, 'package.json'));
            const [sub, ...rest] = args;
            if (sub === 'run') expect(pkg.scripts, label).to.have.property(rest[0]!);
            else if (sub === 'test') expect(pkg.scripts, label).to.have.property('test');
            else if (sub === 'install' || sub === 'i') {
              const names = rest.filter((w) => !w.startsWith('-'));
              expect(names, label).to.not.be.empty;
              for (const name of names) expect(installable.has(name), `${label}: ${name} is neither a package of this repository nor a dependency`).to.equal(true);
            } else expect(sub, label).to.equal('ci');
          } else if (tool === 'npx' || tool === 'eventrelay') {
            const cli = tool === 'npx' ? args.slice(1) : args;
            if (tool === 'npx') expect(args[0], `${label}: npx runs only the eventrelay command here`).to.equal('eventrelay');
            await checkCli(cli, label);
            const config = cli.indexOf('--config');
            if (config >= 0) configs.push(cli[config + 1]!);
          } else if (tool === 'export') {
            for (const word of args) exported.add(word.split('=')[0]!);
          } else if (tool === 'cp') {
            const [from, to] = args as [string, string];
            const source = repositoryPath(from);
            expect(existsSync(join(ROOT, source)), `${label}: ${from} does not exist`).to.equal(true);
            copied.set(to === '.' ? from.split('/').pop()! : to, source);
          } else if (tool === 'node' || tool === 'bash') {
            expect(existsSync(join(ROOT, args[0]!)), `${label}: no file ${args[0]}`).to.equal(true);
          } else if (tool === 'curl') {
            expect(block.marker, `${label}: curl is checked only in blocks marked admin-curl`).to.equal('admin-curl');
          } else {
            expect.fail(`${label}: the test does not know how to check "${tool}"; teach it, or do not put it in a block`);
          }
        }
        // A config the block copies in must get every secret it reads from the block's exports.
        for (const config of configs) {
          const source = copied.get(config);
          if (source === undefined) continue;
          const value: unknown = JSON.parse(readFileSync(join(ROOT, source), 'utf8'));
          const needed = envNames(value);
          expect([...needed].filter((name) => !exported.has(name)), `${where(block)}: ${config} reads these, the block does not export them`).to.deep.equal([]);
          await checkConfig(value, fakeEnv(needed));
        }
        if (block.marker === 'admin-curl') await sendCurls(block);
      });
    }
  });

  describe('text and http blocks match the real thing', () => {
    it('every text or http block is marked with its check', () => {
      for (const block of blocks.filter((b) => b.lang === 'text' || b.lang === 'http')) expect(block.marker, where(block)).to.be.a('string');
    });

    for (const block of blocks.filter((b) => kind(b) === 'config-error')) {
      it(`${where(block)}: eventrelay check prints it`, async () => {
        const [, field, value] = /^config-error ([^=]+)=(.+)$/.exec(block.marker!)!;
        const config = {
          sources: [
            { name: 'web', writeKey: 'k1', destinations: { Webhooks: { webhooks: [{ url: 'https://hooks.example.com/eventrelay' }] } } },
            { name: 'ios', writeKey: 'k2', destinations: { Webhooks: { webhooks: [{ url: 'https://hooks.example.com/ios' }] } } },
          ],
        };
        setPath(config, field!, value);
        mkdirSync(join(ROOT, '.tmp'), { recursive: true });
        const dir = mkdtempSync(join(ROOT, '.tmp', 'snippets-config-'));
        try {
          writeFileSync(join(dir, 'eventrelay.config.json'), JSON.stringify(config));
          const result = await run(process.execPath, [...CLI, 'check', '--config', join(dir, 'eventrelay.config.json')]);
          expect(result.code).to.equal(1);
          expect(result.stderr).to.equal(block.code);
        } finally {
          rmSync(dir, { recursive: true, force: true });
        }
      });
    }

    for (const block of blocks.filter((b) => kind(b) === 'batch-request')) {
      it(`${where(block)}: Analytics sends this request`, async () => {
        const { method, path, headers, body } = httpRequest(block);
        const shown = JSON.parse(body) as { batch: Record<string, unknown>[]; sentAt: string };
        const authorization = headers.find(([name]) => name.toLowerCase() === 'authorization')![1];
        const writeKey = Buffer.from(authorization.replace(/^Basic /, ''), 'base64').toString().replace(/:$/, '');
        const sink = await startSink();
        try {
          const analytics = new Analytics({ writeKey, endpoint: sink.url, path, flushAt: shown.batch.length });
          for (const { type, context: _context, ...params } of shown.batch) {
            (analytics as unknown as Record<string, (params: unknown) => void>)[type as string]!(params);
          }
          await analytics.closeAndFlush();
          const [received] = sink.requests;
          expect(received!.method).to.equal(method);
          expect(received!.url).to.equal(path);
          expectHeaders(received!, headers, ['host', 'connection', 'content-length', 'transfer-encoding']);
          const sentAt = (JSON.parse(received!.body) as { sentAt: string }).sentAt;
          expect(new Date(sentAt).toISOString()).to.equal(sentAt);
          expect(received!.body.replace(`"sentAt":"${sentAt}"`, `"sentAt":"${shown.sentAt}"`)).to.equal(body.replace(/\n$/, ''));
        } finally {
          await sink.close();
        }
      });
    }

    for (const block of blocks.filter((b) => kind(b) === 'webhook-request')) {
      it(`${where(block)}: WebhookDestination sends this request`, async () => {
        const secret = /secret=(\S+)/.exec(block.marker!)![1]!;
        const { method, path, headers, body } = httpRequest(block);
        const senders = new Set(['host', 'content-type', 'user-agent', 'x-signature', 'content-length', 'webhook-id', 'webhook-timestamp', 'webhook-signature']);
        const sink = await startSink((_request, res) => res.writeHead(204).end());
        const destination = new WebhookDestination({
          webhooks: [{ url: `${sink.url}${path}`, headers: Object.fromEntries(headers.filter(([name]) => !senders.has(name.toLowerCase()))) }],
          sharedSecret: secret,
        });
        try {
          // The message the block shows, made from the call as the forwarder makes it.
          const { version: _version, ...call } = JSON.parse(body) as Record<string, unknown>;
          const result = await destination.deliver(toWebhookMessage(call as unknown as InboundMessage));
          expect(result.status).to.equal('delivered');
          const [received] = sink.requests;
          expect(received!.method).to.equal(method);
          expect(received!.url).to.equal(path);
          expect(received!.body).to.equal(body.replace(/\n$/, ''));
          expectHeaders(received!, headers.filter(([name]) => name.toLowerCase() !== 'host'), ['host', 'connection']);
        } finally {
          await destination.close();
          await sink.close();
        }
      });
    }
  });
});

/** The request an http block shows: request line, headers, and the body after a blank line. */
function httpRequest(block: CodeBlock): { method: string; path: string; headers: (readonly [string, string])[]; body: string } {
  const [head, body] = block.code.split(/\n\n/) as [string, string];
  const [requestLine, ...headerLines] = head.split('\n');
  const [method, path] = requestLine!.split(' ') as [string, string];
  const headers = headerLines.map((line) => [line.slice(0, line.indexOf(':')), line.slice(line.indexOf(':') + 1).trim()] as const);
  return { method, path, headers, body };
}

/** Each header shown has the value received, and nothing else was sent but the framing headers named. */
function expectHeaders(received: ReceivedRequest, shown: readonly (readonly [string, string])[], framing: readonly string[]): void {
  for (const [name, value] of shown) expect(received.headers[name.toLowerCase()], name).to.equal(value);
  const names = new Set([...shown.map(([name]) => name.toLowerCase()), ...framing]);
  expect(received.rawHeaderNames.map((n) => n.toLowerCase()).filter((n) => !names.has(n))).to.deep.equal([]);
}

/** Sends each `curl` of an admin-curl block to a real forwarder (memory store), as curl would; each must answer 2xx. */
async function sendCurls(block: CodeBlock): Promise<void> {
  const receiver = await startSink((_request, res) => res.writeHead(204).end());
  const forwarder = createForwarder(
    { adminToken: ADMIN_TOKEN, storage: { type: 'memory' }, sources: [{ ...baseSource, destinations: { Webhooks: { webhooks: [{ url: receiver.url }] } } }] },
    { store: new MemoryStore() },
  );
  try {
    const { url } = await forwarder.listen({ port: 0, host: '127.0.0.1' });
    const curls = shellCommands(block.code, { EVENTRELAY_ADMIN_TOKEN: ADMIN_TOKEN }).filter((c) => c[0] === 'curl');
    expect(curls).to.not.be.empty;
    for (const curl of curls) {
      let method: string | undefined;
      let body: string | undefined;
      let target: string | undefined;
      const headers: Record<string, string> = {};
      for (let i = 1; i < curl.length; i++) {
        const word = curl[i]!;
        if (word === '-s') continue;
        else if (word === '-X') method = curl[++i];
        else if (word === '-H') {
          const header = curl[++i]!;
          headers[header.slice(0, header.indexOf(':'))] = header.slice(header.indexOf(':') + 1).trim();
        } else if (word === '-d') body = curl[++i];
        else if (!word.startsWith('-') && target === undefined) target = word;
        else expect.fail(`${where(block)}: the test does not read curl's ${word}`);
      }
      expect(target, where(block)).to.match(/^http:\/\/127\.0\.0\.1:8787\//);
      const response = await fetch(target!.replace('http://127.0.0.1:8787', url), { method: method ?? (body === undefined ? 'GET' : 'POST'), headers, body });
      const text = await response.text();
      expect(response.status, `${where(block)}: ${curl.join(' ')} → ${response.status} ${text}`).to.be.within(200, 299);
    }
  } finally {
    await forwarder.close();
    await receiver.close();
  }
}
