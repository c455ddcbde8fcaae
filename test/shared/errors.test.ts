import { describe, it } from 'mocha';
import { expect } from 'chai';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import * as errors from '../../packages/eventrelay/src/errors';
import { Analytics } from '../../packages/eventrelay/src/client/analytics';
import { FakeClock } from '../helpers/fake-clock';
import { FakeTransport } from '../helpers/fake-transport';
import * as main from '../../packages/eventrelay/src/index';
import * as webhooks from '../../packages/eventrelay/src/webhooks/index';
import * as forwarder from '../../packages/forwarder/src/index';
import * as segment from '../../packages/eventrelay/src/compat/segment/index';
import * as classic from '../../packages/eventrelay/src/compat/analytics-node/index';

const classes = Object.entries(errors).filter(([, value]) => typeof value === 'function') as [string, new (...args: never[]) => Error][];

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sources(path) : path.endsWith('.ts') ? [path] : [];
  });
}

/** The members of the `ErrorCode` union, read from its declaration. */
function unionCodes(): string[] {
  const text = readFileSync('packages/eventrelay/src/errors.ts', 'utf8');
  const declaration = /export type ErrorCode =([\s\S]*?);/.exec(text)?.[1] ?? '';
  return [...declaration.matchAll(/'(ERR_[A-Z_]+)'/g)].map((m) => m[1]!).sort();
}

describe('errors', () => {
  it('every error class is exported, the same class, from each entry point', () => {
    expect(classes.map(([name]) => name)).to.include.members(['EventRelayError', 'ConfigError', 'NetworkError', 'SignatureVerificationError']);
    for (const [name, value] of classes) {
      for (const [entry, exports] of Object.entries({
        eventrelay: main,
        'eventrelay/webhooks': webhooks,
        '@eventrelay/forwarder': forwarder,
        'eventrelay/segment': segment,
        'eventrelay/analytics-node': classic,
      })) {
        expect((exports as Record<string, unknown>)[name], `${name} from ${entry}`).to.equal(value);
      }
    }
  });

  it('every code of the ErrorCode union is in the errors table of the eventrelay reference, and nothing else is', () => {
    const readme = readFileSync('docs/sdk-reference.md', 'utf8');
    const section = /\n## Errors\n([\s\S]*?)\n## /.exec(readme)?.[1] ?? '';
    const table = [...new Set([...section.matchAll(/`(ERR_[A-Z_]+)`/g)].map((m) => m[1]!))].sort();
    expect(unionCodes()).to.have.length.above(10);
    expect(table).to.deep.equal(unionCodes());
  });

  it('the forwarder reference\'s errors table names only codes of the union and classes @eventrelay/forwarder exports', () => {
    const readme = readFileSync('docs/forwarder-reference.md', 'utf8');
    const section = /\n## Errors\n([\s\S]*?)\n## /.exec(readme)?.[1] ?? '';
    const rows = section.split('\n').filter((line) => /^\| `/.test(line));
    expect(rows.length).to.be.above(3);
    for (const row of rows) {
      const [, names, codes] = row.split('|');
      for (const [, code] of codes!.matchAll(/`(ERR_[A-Z_]+)`/g)) expect(unionCodes(), row).to.include(code);
      for (const [, name] of names!.matchAll(/`(\w+)`/g)) expect((forwarder as Record<string, unknown>)[name!], `${name} from @eventrelay/forwarder`).to.be.a('function');
    }
  });

  it('no exported error class is never raised: each is constructed somewhere in src', () => {
    const code = [...sources('packages/eventrelay/src'), ...sources('packages/forwarder/src')]
      .filter((file) => !file.endsWith('errors.ts'))
      .map((file) => readFileSync(file, 'utf8'))
      .join('\n');
    for (const [name] of classes) {
      expect(code.includes(`new ${name}(`), `${name} is never constructed`).to.equal(true);
    }
  });

  it('ERR_INTERNAL: a failure the client did not foresee reaches the callback, with the cause', async () => {
    const boom = new Error('the random source broke');
    const analytics = new Analytics(
      { writeKey: 'k', endpoint: 'https://ingest.test', transport: new FakeTransport(() => 503), maxRetries: 3 },
      {
        clock: new FakeClock(),
        random: () => {
          throw boom;
        },
      },
    );
    const results: unknown[] = [];
    analytics.track({ userId: 'u', event: 'E' }, (error) => results.push(error));
    await analytics.flush();
    expect(results).to.have.length(1);
    expect(results[0]).to.be.instanceOf(errors.EventRelayError).and.include({ code: 'ERR_INTERNAL', cause: boom });
  });

  it('a NetworkError carries one of the network codes, and names itself', () => {
    const error = new errors.NetworkError('Request to https://h.example/ failed: connection reset');
    expect(error).to.be.instanceOf(errors.EventRelayError);
    expect(error).to.include({ name: 'NetworkError', code: 'ERR_NETWORK', retryable: true });
    expect(new errors.TimeoutError(5000)).to.include({ name: 'TimeoutError', code: 'ERR_TIMEOUT', timeout: 5000 });
  });
});
