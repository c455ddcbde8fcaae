import { describe, it } from 'mocha';
import { expect } from 'chai';
import { HttpError, NetworkError } from 'eventrelay/internal';
import { FakeClock } from '../../../../../test/helpers/fake-clock';
import { FAILING_LINE_MS, LOG_WINDOW_MS, OperatorLog, responseExcerpt } from '../../../src/observability/logs';
import type { OperatorLogger } from '../../../src/observability/logs';
import type { AttemptReport } from '../../../src/scheduling/queue';
import type { UrlOutcome } from '../../../src/delivery/destination';

interface Written {
  readonly level: 'info' | 'warn' | 'error';
  readonly fields: Record<string, unknown>;
  readonly msg: string;
}

function recorder(): { logger: OperatorLogger; lines: Written[] } {
  const lines: Written[] = [];
  const at = (level: Written['level']) => (fields: object, msg: string) => lines.push({ level, fields: fields as Record<string, unknown>, msg });
  return { logger: { info: at('info'), warn: at('warn'), error: at('error') }, lines };
}

const URL = 'https://hooks.example/in';

function answered(status: number, body?: string, url = URL): UrlOutcome {
  const response = body === undefined ? {} : { response: Buffer.from(body) };
  if (status >= 200 && status < 300) return { url, index: 0, status, retryable: false, durationMs: 3, ...response };
  return { url, index: 0, status, error: new HttpError(`${url} answered HTTP ${status}`, status, true), retryable: true, durationMs: 3, ...response };
}

function timedOut(url = URL): UrlOutcome {
  return { url, index: 0, error: new NetworkError(`${url}: timed out`, { code: 'ERR_TIMEOUT' }), retryable: true, durationMs: 5000 };
}

let nextId = 1;
function report(outcome: UrlOutcome, source = 'web'): AttemptReport {
  const ok = outcome.error === undefined;
  const id = nextId++;
  return {
    id,
    source,
    kind: 'message',
    messageId: `m${id}`,
    createdAt: 0,
    orderKey: undefined,
    result: ok ? { status: 'delivered', url: outcome.url, attempt: 1, outcomes: [outcome] } : { status: 'retry', attempt: 1, nextAttemptAt: 0, outcomes: [outcome] },
  };
}

describe('OperatorLog: endpoint.failing and endpoint.recovered', () => {
  it('writes endpoint.failing at the first failed attempt, with the status and the answer', () => {
    const { logger, lines } = recorder();
    const log = new OperatorLog(logger, new FakeClock());
    log.attempt(report(answered(500, 'database down')));
    expect(lines).to.have.length(1);
    expect(lines[0]!.level).to.equal('warn');
    expect(lines[0]!.fields).to.deep.include({ event: 'endpoint.failing', source: 'web', url: URL, status: 500, response: 'database down', failedAttempts: 1 });
    expect(lines[0]!.fields).not.to.have.property('error');
  });

  it('names the error code, without a response, when the receiver did not answer', () => {
    const { logger, lines } = recorder();
    new OperatorLog(logger, new FakeClock()).attempt(report(timedOut()));
    expect(lines[0]!.fields).to.deep.include({ event: 'endpoint.failing', error: 'ERR_TIMEOUT', response: null });
    expect(lines[0]!.fields).not.to.have.property('status');
  });

  it('while it keeps failing: nothing more within the minute, then one line with the count since the last', () => {
    const { logger, lines } = recorder();
    const clock = new FakeClock();
    const log = new OperatorLog(logger, clock);
    log.attempt(report(answered(500, 'down')));
    for (let i = 0; i < 5; i++) {
      clock.skip(FAILING_LINE_MS / 10);
      log.attempt(report(answered(401, 'bad signature')));
    }
    expect(lines.filter((l) => l.fields.event === 'endpoint.failing')).to.have.length(1);
    clock.skip(FAILING_LINE_MS);
    log.attempt(report(answered(401, 'bad signature')));
    const failing = lines.filter((l) => l.fields.event === 'endpoint.failing');
    expect(failing).to.have.length(2);
    expect(failing[1]!.fields).to.deep.include({ status: 401, response: 'bad signature', failedSinceLast: 6, failedAttempts: 7 });
    expect(failing[1]!.msg).to.include('6 more failed attempts since the last line');
    // And again nothing until the next minute.
    log.attempt(report(answered(401, 'bad signature')));
    expect(lines.filter((l) => l.fields.event === 'endpoint.failing')).to.have.length(2);
  });

  it('counts each endpoint apart: another URL or source failing writes its own first line', () => {
    const { logger, lines } = recorder();
    const log = new OperatorLog(logger, new FakeClock());
    log.attempt(report(answered(500)));
    log.attempt(report(answered(500, undefined, 'https://other.example/in')));
    log.attempt(report(answered(500), 'app'));
    log.attempt(report(answered(500)));
    expect(lines.map((l) => [l.fields.source, l.fields.url])).to.deep.equal([
      ['web', URL],
      ['web', 'https://other.example/in'],
      ['app', URL],
    ]);
  });

  it('writes endpoint.recovered at the first 2xx after failing, with how long and how many; then a failure is first again', () => {
    const { logger, lines } = recorder();
    const clock = new FakeClock();
    const log = new OperatorLog(logger, clock);
    log.attempt(report(answered(200)));
    expect(lines).to.deep.equal([]);
    log.attempt(report(answered(500)));
    clock.skip(90_000);
    log.attempt(report(answered(401, 'bad signature')));
    clock.skip(30_000);
    log.attempt(report(answered(204)));
    const recovered = lines.find((l) => l.fields.event === 'endpoint.recovered')!;
    expect(recovered.level).to.equal('info');
    expect(recovered.fields).to.deep.include({ source: 'web', url: URL, status: 204, failedForMs: 120_000, failedAttempts: 2 });
    log.attempt(report(answered(200)));
    expect(lines.filter((l) => l.fields.event === 'endpoint.recovered')).to.have.length(1);
    log.attempt(report(answered(503)));
    expect(lines.at(-1)!.fields).to.deep.include({ event: 'endpoint.failing', status: 503, failedAttempts: 1 });
  });

  it('writes nothing without a logger', () => {
    expect(() => new OperatorLog(undefined, new FakeClock()).attempt(report(answered(500)))).not.to.throw();
  });
});

describe('responseExcerpt', () => {
  it('keeps the first 200 characters, control characters escaped', () => {
    expect(responseExcerpt(undefined)).to.equal(null);
    expect(responseExcerpt(Buffer.alloc(0))).to.equal(null);
    expect(responseExcerpt(Buffer.from('bad\nsignature\r\t\u001b[31m\u0085\u2028é'))).to.equal('bad\\nsignature\\r\\t\\u001b[31m\\u0085\\u2028é');
    const long = responseExcerpt(Buffer.from('😀'.repeat(300)))!;
    expect([...long]).to.have.length(200);
  });
});

describe('OperatorLog: a flood of one kind of line', () => {
  function flood(times: number): Written[] {
    const { logger, lines } = recorder();
    const clock = new FakeClock();
    const log = new OperatorLog(logger, clock);
    for (let i = 0; i <= times; i++) log.refused('unauthorized', 401, 'web');
    clock.skip(LOG_WINDOW_MS);
    log.flush();
    return lines;
  }

  it('says "once" for one line held back and the count for more', () => {
    const one = flood(1);
    expect(one).to.have.length(2);
    expect(one[1]!.msg).to.equal('ingestion refused: unauthorized (repeated once in the last 10 s)');
    expect(one[1]!.fields).to.include({ repeated: 1 });
    const many = flood(7);
    expect(many[1]!.msg).to.equal('ingestion refused: unauthorized (repeated 7 times in the last 10 s)');
    expect(many[1]!.fields).to.include({ repeated: 7 });
  });
});
