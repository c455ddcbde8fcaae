import { describe, it, before, after } from 'mocha';
import { expect } from 'chai';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { useTempDirs } from '../../../../test/helpers/temp-dir';
import { runCli } from './helpers';
import { jsonText, printable } from '../../src/cli/printable';

const ADMIN = 'cli-hostile-admin-token-7d1e';
const PASSWORD = 'pw-that-must-not-show';

/** messageIds a write-key holder may send: clear screen, set the window title, a forged row, a bidi override. */
const HOSTILE = {
  clear: 'clear\u001b[2Jme',
  title: 'title\u001b]0;owned\u0007end',
  forged: 'one\n99  delivered  web  track  forged-row',
  bidi: 'abc\u202Edcba',
  c1: 'c1\u009b31mred',
};

/** Anything a terminal would act on or hide: C0 but for the newline between lines, DEL, C1, bidi and invisible characters. */
// eslint-disable-next-line no-control-regex -- finding them is the point
const ACTIVE = /[\u0000-\u0009\u000B-\u001F\u007F-\u009F\u200B-\u200F\u202A-\u202E\u2066-\u2069\uFEFF]/u;

/**
 * The CLI prints what a forwarder answers: those answers hold the senders' text. A fake forwarder
 * answers with hostile fields and errors; nothing a terminal acts on reaches stdout or stderr, and
 * `--json` stays the exact value.
 */
describe('the CLI trusts nothing it prints (the built CLI, a fake admin API with hostile answers)', function () {
  this.timeout(30_000);
  const tempDir = useTempDirs('eventrelay-cli-hostile-');
  let server: Server;
  let url: string;
  let file: string;
  const items = Object.entries(HOSTILE).map(([name, messageId], i) => ({
    id: i + 1,
    source: 'web',
    messageId,
    type: 'track',
    status: 'failed',
    attempts: 1,
    receivedAt: '2026-11-28T10:00:00.000Z',
    reason: name === 'clear' ? 'HTTP 500: \u001b[31mreceiver said no\u001b[0m\r\nSet-Cookie: x' : null,
  }));

  const attemptOf = (id: number) => ({ series: 1, attempt: 1, url: 'https://hooks.example/x', status: 500, responseBody: `answer ${id} \u001b[2J\u009b\u202E` });

  before(async () => {
    server = createServer((req, res) => {
      const json = (status: number, body: unknown) => res.writeHead(status, { 'Content-Type': 'application/json' }).end(JSON.stringify(body));
      if (req.url?.startsWith('/admin/messages')) return json(200, { items, nextCursor: null });
      // --json adds each row's attempts, with what the receiver answered: hostile too.
      const detail = /^\/admin\/deliveries\/(\d+)$/.exec(req.url ?? '');
      if (detail !== null) return json(200, { ...items[Number(detail[1]) - 1], attemptLog: [attemptOf(Number(detail[1]))] });
      if (req.url === '/admin/deliveries/1/replay') return json(409, { success: false, error: { code: 'x', message: 'refused \u001b]0;pwned\u0007 with\nEVIL LINE\u202E', field: 'f\u001b[2J' } });
      return json(404, { success: false, error: { code: 'not_found', message: 'no' } });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    file = join(tempDir(), 'admin.json');
    writeFileSync(file, JSON.stringify({ adminToken: ADMIN }));
  });
  after(() => {
    server?.close();
  });

  it('the deliveries table escapes every control, bidi and invisible character visibly: one row per delivery, no escape sequence', async () => {
    const run = await runCli(['deliveries', '--config', file, '--url', url]);
    expect(run.code, run.stderr).to.equal(0);
    expect(run.stdout).to.not.match(ACTIVE);
    const lines = run.stdout.trimEnd().split('\n');
    expect(lines).to.have.length(1 + items.length);
    expect(lines.filter((l) => l.includes('forged-row'))).to.have.length(1);
    expect(lines.find((l) => l.startsWith('99'))).to.equal(undefined);
    expect(run.stdout).to.contain('clear\\u{1B}[2Jme').and.contain('title\\u{1B}]0;owned\\u{7}end').and.contain('abc\\u{202E}dcba').and.contain('c1\\u{9B}31mred');
    expect(run.stdout).to.contain('HTTP 500: \\u{1B}[31mreceiver said no\\u{1B}[0m\\u{D}\\u{A}Set-Cookie: x');
  });

  it('--json is the exact answer, with nothing a terminal acts on left raw', async () => {
    const run = await runCli(['deliveries', '--json', '--config', file, '--url', url]);
    expect(run.code, run.stderr).to.equal(0);
    expect(JSON.parse(run.stdout)).to.deep.equal(items.map((item) => ({ ...item, attemptLog: [attemptOf(item.id)] })));
    expect(run.stdout).to.not.match(ACTIVE);
  });

  it('an error message of the API is escaped: one line, no escape sequence', async () => {
    const run = await runCli(['replay', '1', '--config', file, '--url', url]);
    expect(run.code).to.equal(1);
    expect(run.stderr).to.not.match(ACTIVE);
    expect(run.stderr.trimEnd().split('\n')).to.have.length(1);
    expect(run.stderr).to.contain('refused \\u{1B}]0;pwned\\u{7} with\\u{A}EVIL LINE\\u{202E}');
  });

  it('--url with a password never prints it: refused with the URL shown as ***', async () => {
    for (const args of [['deliveries'], ['replay', '1'], ['recover', '--source', 'web', '--since', '2026-01-01T00:00:00Z'], ['endpoints', '--source', 'web'], ['apply']]) {
      const run = await runCli([...args, '--config', file, '--url', url.replace('http://', `http://admin:${PASSWORD}@`)]);
      expect(run.code, args.join(' ')).to.equal(2);
      expect(run.stdout + run.stderr, args.join(' ')).to.not.contain(PASSWORD);
      expect(run.stderr, args.join(' ')).to.contain('admin:***@');
    }
    const gone = await runCli(['deliveries', '--config', file, '--url', `http://admin:${PASSWORD}@127.0.0.1:1`]);
    expect(gone.stdout + gone.stderr).to.not.contain(PASSWORD);
  });

  it('printable and jsonText, by themselves', () => {
    expect(printable('a\u001bb\u200bc\u2028d\\e')).to.equal('a\\u{1B}b\\u{200B}c\\u{2028}d\\e');
    expect(printable('plain text, ünïcode, 漢字')).to.equal('plain text, ünïcode, 漢字');
    const value = { s: 'x\u0085\u202e\u{E0041}\u007f' };
    expect(jsonText(value)).to.equal('{"s":"x\\u0085\\u202E\\uDB40\\uDC41\\u007F"}');
    expect(JSON.parse(jsonText(value))).to.deep.equal(value);
  });
});
