import { before, describe, it } from 'mocha';
import { expect } from 'chai';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseConfig, loadConfigFile, CONFIG_DEFAULTS } from '../../src/config';
import { ConfigError } from '../../../eventrelay/src/errors';
import { useTempDirs } from '../../../../test/helpers/temp-dir';
import { refused } from './config-refusal';

function valid(): any {
  return {
    sources: [
      { name: 'web', writeKey: 'wk-web', destinations: { Webhooks: { webhooks: [{ url: 'https://example.test/hook' }] } } },
      {
        name: 'ios',
        writeKey: 'wk-ios',
        destinations: { Webhooks: { enabled: true, sharedSecret: 's3cret', webhooks: [{ url: 'http://127.0.0.1:9/a', headers: { 'X-Team': 'mobile' } }] } },
      },
    ],
  };
}

describe('parseConfig', () => {
  it('fills in the defaults', () => {
    const config = parseConfig(valid(), {});
    expect(config.port).to.equal(CONFIG_DEFAULTS.port);
    expect(config.host).to.equal('127.0.0.1');
    expect(config.storage).to.deep.equal(CONFIG_DEFAULTS.storage);
    // Two delivering sources: each may hold half of the attempts in flight.
    const { networks, networkPolicy, ...delivery } = config.delivery;
    expect(delivery).to.deep.equal({ ...CONFIG_DEFAULTS.delivery, sourceConcurrency: 16 });
    expect(networks).to.deep.equal({});
    expect(networkPolicy.refusal('169.254.169.254')).to.be.a('string');
    expect(config.sources[0]!.webhooks).to.deep.equal({
      enabled: true,
      sharedSecret: undefined,
      signing: 'x-signature',
      webhooks: [{ url: 'https://example.test/hook', headers: {} }],
    });
    expect(config.sources[1]!.webhooks!.sharedSecret).to.equal('s3cret');
  });

  it('gives a single delivering source every slot, and takes an explicit share', () => {
    expect(parseConfig({ sources: [valid().sources[0]] }, {}).delivery.sourceConcurrency).to.equal(32);
    expect(parseConfig({ ...valid(), delivery: { concurrency: 10, sourceConcurrency: 7 } }, {}).delivery.sourceConcurrency).to.equal(7);
    expect(refused({ ...valid(), delivery: { concurrency: 10, sourceConcurrency: 11 } }).field).to.equal('delivery.sourceConcurrency');
  });

  it('keeps a source without destinations', () => {
    const config = parseConfig({ sources: [{ name: 'a', writeKey: 'k' }] }, {});
    expect(config.sources[0]!.webhooks).to.equal(undefined);
  });

  it('names the field of a bad webhook URL', () => {
    const config = valid();
    config.sources[1].destinations.Webhooks.webhooks[0].url = 'ftp://example.test/x';
    const error = refused(config);
    expect(error.field).to.equal('sources[1].destinations.Webhooks.webhooks[0].url');
    expect(error.message).to.match(/http or https URL/).and.match(/ftp:/);
  });

  it('does not echo a URL that cannot be parsed (it may hold a token)', () => {
    const config = valid();
    config.sources[0].destinations.Webhooks.webhooks[0].url = 'not a url token=abc123';
    const error = refused(config);
    expect(error.field).to.equal('sources[0].destinations.Webhooks.webhooks[0].url');
    expect(error.message).not.to.contain('abc123');
  });

  it('refuses 0 or more than 5 webhooks', () => {
    const none = valid();
    none.sources[0].destinations.Webhooks.webhooks = [];
    expect(refused(none).field).to.equal('sources[0].destinations.Webhooks.webhooks');
    const six = valid();
    six.sources[0].destinations.Webhooks.webhooks = Array.from({ length: 6 }, (_, i) => ({ url: `https://e.test/${i}` }));
    const error = refused(six);
    expect(error.field).to.equal('sources[0].destinations.Webhooks.webhooks');
    expect(error.message).to.match(/1 to 5/).and.match(/6 entries/);
  });

  it('refuses unknown fields, so typos do not pass silently', () => {
    const config = valid();
    config.sources[0].destinations.Webhooks.sharedSecet = 'x';
    const error = refused(config);
    expect(error.field).to.equal('sources[0].destinations.Webhooks.sharedSecet');
    expect(error.message).to.match(/`sharedSecret`/);
    const other = valid();
    other.sources[0].destinations.Mixpanel = {};
    expect(refused(other).field).to.equal('sources[0].destinations.Mixpanel');
  });

  it('refuses duplicate names and write keys without printing the key', () => {
    const names = valid();
    names.sources[1].name = 'web';
    expect(refused(names).field).to.equal('sources[1].name');
    const keys = valid();
    keys.sources[1].writeKey = 'wk-web';
    const error = refused(keys);
    expect(error.field).to.equal('sources[1].writeKey');
    expect(error.message).not.to.contain('wk-web');
  });

  it('never prints a secret of the wrong type or shape', () => {
    const config = valid();
    config.sources[1].destinations.Webhooks.sharedSecret = 12345678;
    const error = refused(config);
    expect(error.field).to.equal('sources[1].destinations.Webhooks.sharedSecret');
    expect(error.message).not.to.contain('12345678');
  });

  it('reads secrets from { "env": NAME }', () => {
    const config = valid();
    config.sources[0].writeKey = { env: 'WEB_KEY' };
    config.sources[1].destinations.Webhooks.sharedSecret = { env: 'IOS_SECRET' };
    config.sources[1].destinations.Webhooks.webhooks[0].headers.Authorization = { env: 'IOS_AUTH' };
    config.adminToken = { env: 'ADMIN' };
    const resolved = parseConfig(config, { WEB_KEY: 'k1', IOS_SECRET: 's1', IOS_AUTH: 'Bearer t', ADMIN: 'a1' });
    expect(resolved.sources[0]!.writeKey).to.equal('k1');
    expect(resolved.sources[1]!.webhooks!.sharedSecret).to.equal('s1');
    expect(resolved.sources[1]!.webhooks!.webhooks[0]!.headers).to.deep.equal({ 'X-Team': 'mobile', Authorization: 'Bearer t' });
    expect(resolved.adminToken).to.equal('a1');
  });

  it('names the field and the variable when an env secret is not set', () => {
    const config = valid();
    config.sources[1].destinations.Webhooks.sharedSecret = { env: 'IOS_SECRET' };
    const error = refused(config, {});
    expect(error.field).to.equal('sources[1].destinations.Webhooks.sharedSecret');
    expect(error.message).to.contain('IOS_SECRET');
  });

  it('checks numbers with their range', () => {
    expect(refused({ ...valid(), port: 70000 }).field).to.equal('port');
    const error = refused({ ...valid(), delivery: { concurrency: 0 } });
    expect(error.field).to.equal('delivery.concurrency');
    expect(error.message).to.equal('Expected `delivery.concurrency` to be an integer from 1 to 1024, got `0` (number)');
    expect(refused({ ...valid(), delivery: { minRetryDelay: 5000, maxRetryDelay: 100 } }).field).to.equal('delivery.minRetryDelay');
    expect(refused({ ...valid(), storage: { synchronous: 'off' } }).field).to.equal('storage.synchronous');
  });

  it('reads the PostgreSQL storage: url from the environment, pool and lease with defaults', () => {
    const config = parseConfig(
      { ...valid(), storage: { type: 'postgres', url: { env: 'DATABASE_URL' } } },
      { DATABASE_URL: 'postgres://app:pw@db.internal:5432/events' },
    );
    expect(config.storage).to.deep.include({ type: 'postgres', url: 'postgres://app:pw@db.internal:5432/events', poolSize: 10, connectTimeout: 5000, lease: 30_000 });
    const tuned = parseConfig({ ...valid(), storage: { type: 'postgres', url: 'postgresql://h/db', poolSize: 3, lease: 8000 } }, {});
    expect(tuned.storage).to.deep.include({ poolSize: 3, lease: 8000 });
  });

  it('refuses a PostgreSQL storage without a postgres:// URL, never echoing it', () => {
    expect(refused({ ...valid(), storage: { type: 'postgres' } }).field).to.equal('storage.url');
    const scheme = refused({ ...valid(), storage: { type: 'postgres', url: 'mysql://u:topsecret@h/db' } });
    expect(scheme.field).to.equal('storage.url');
    expect(scheme.message).to.contain('postgres://').and.not.contain('topsecret');
    const unset = refused({ ...valid(), storage: { type: 'postgres', url: { env: 'DATABASE_URL' } } }, {});
    expect(unset.message).to.contain('DATABASE_URL');
    expect(refused({ ...valid(), storage: { url: 'postgres://h/db' } }).field).to.equal('storage.url');
    expect(refused({ ...valid(), storage: { type: 'postgres', url: 'postgres://h/db', poolSize: 0 } }).field).to.equal('storage.poolSize');
  });

  it('refuses a lease shorter than an attempt can take', () => {
    const error = refused({ ...valid(), delivery: { timeout: 5000 }, storage: { lease: 5500 } });
    expect(error.field).to.equal('storage.lease');
    expect(error.message).to.match(/at least `delivery.timeout` \+ 1000 ms/);
  });

  it('takes no sources (they may all be made through the admin API), but refuses a `sources` that is not a list', () => {
    expect(parseConfig({ sources: [] }, {}).sources).to.deep.equal([]);
    expect(parseConfig({}, {}).sources).to.deep.equal([]);
    expect(refused({ sources: { web: {} } }).field).to.equal('sources');
  });
});

describe('loadConfigFile', () => {
  const makeDir = useTempDirs('eventrelay-config-');
  let dir: string;
  before(() => {
    dir = makeDir();
  });

  it('reads a JSON file', () => {
    const path = join(dir, 'ok.json');
    writeFileSync(path, JSON.stringify(valid()));
    expect(loadConfigFile(path, {}).sources.map((s) => s.name)).to.deep.equal(['web', 'ios']);
  });

  it('locates a syntax error without quoting the text', () => {
    const path = join(dir, 'bad.json');
    writeFileSync(path, '{\n  "sources": [\n    { "writeKey": topsecret }\n  ]\n}');
    expect(() => loadConfigFile(path, {})).to.throw(ConfigError, /not valid JSON/);
    try {
      loadConfigFile(path, {});
    } catch (error) {
      expect((error as Error).message).not.to.contain('topsecret');
    }
    const trailing = join(dir, 'trailing.json');
    writeFileSync(trailing, '{\n  "sources": [],\n}');
    expect(() => loadConfigFile(trailing, {})).to.throw(ConfigError, /line 3, column 1/);
  });

  it('says so when the file is missing', () => {
    expect(() => loadConfigFile(join(dir, 'nope.json'), {})).to.throw(ConfigError, /ENOENT/);
  });
});

describe('packages/forwarder/examples/eventrelay.config.json', () => {
  it('is a valid config once its environment variables are set', () => {
    const config = loadConfigFile('packages/forwarder/examples/eventrelay.config.json', {
      EVENTRELAY_ADMIN_TOKEN: 'a',
      WEB_WRITE_KEY: 'w',
      WEB_WEBHOOK_SECRET: 's',
      BACKUP_HOOK_AUTH: 'Bearer b',
      IOS_WRITE_KEY: 'i',
    });
    expect(config.sources.map((s) => [s.name, s.webhooks?.enabled])).to.deep.equal([['web', true], ['ios', false]]);
    expect(config.sources[0]!.webhooks!.webhooks[1]!.headers).to.deep.equal({ Authorization: 'Bearer b' });
  });
});

describe('parseConfig with hostile input: every refusal names its field', () => {
  const HOSTILE: unknown[] = [
    null, 0, -1, 1.5, 1e300, '', ' ', 'x', 'x'.repeat(10_000), '\u0000', true, false, [], [1], [null], [{}], {}, { env: 'UNSET_VARIABLE' }, { env: 1 },
    { a: 1 }, 'ftp://x', 'http://', 'postgres://x', '/v1', 'memory', 'postgres', 'standard-webhooks', 'whsec_!!', { Host: 'x' }, { 'bad name': 'x' },
    { 'X-A': 'a', 'x-a': 'b' }, { 'X-A': 1 }, ['s', ''], [''],
  ];
  function full(): any {
    return {
      host: '127.0.0.1',
      port: 1,
      adminToken: 't',
      debugger: true,
      metrics: { path: '/m' },
      storage: { type: 'sqlite', dataDir: 'd', synchronous: 'full', retention: 100_000, keepDelivered: 0, deliveryLog: true, lease: 10_000 },
      delivery: { concurrency: 2, sourceConcurrency: 1, timeout: 10, retryWindow: 10, minRetryDelay: 1, maxRetryDelay: 10 },
      sources: [
        {
          name: 'web',
          writeKey: 'k',
          destinations: { Webhooks: { enabled: true, sharedSecret: 's', signing: 'x-signature', webhooks: [{ url: 'https://a.test/x', headers: { 'X-A': 'b' } }] } },
        },
      ],
    };
  }
  /** Every path in the config, as keys from the top. */
  function paths(value: unknown, at: (string | number)[] = []): (string | number)[][] {
    const out = [at];
    if (typeof value === 'object' && value !== null) {
      for (const [k, v] of Object.entries(value)) out.push(...paths(v, [...at, Array.isArray(value) ? Number(k) : k]));
    }
    return out;
  }

  it('puts each hostile value at each path and gets a ConfigError with a field every time (the top level is "")', () => {
    let refusals = 0;
    const check = (config: unknown) => {
      try {
        parseConfig(config, {});
      } catch (error) {
        expect(error).to.be.instanceOf(ConfigError);
        expect((error as ConfigError).field, (error as Error).message).to.be.a('string');
        refusals++;
      }
    };
    for (const path of paths(full())) {
      for (const value of HOSTILE) {
        if (path.length === 0) {
          check(value);
          continue;
        }
        const config = full();
        let parent = config;
        for (const key of path.slice(0, -1)) parent = parent[key];
        parent[path.at(-1)!] = value;
        check(config);
      }
      const config = full();
      let target = config;
      for (const key of path) target = target[key];
      if (typeof target === 'object' && target !== null && !Array.isArray(target)) {
        target.unknownField = 1;
        check(config);
      }
    }
    expect(refusals).to.be.above(500);
  });

  it('refuses a write key or an admin token of spaces only, from the file or the environment', () => {
    const spaces = { sources: [{ name: 'web', writeKey: '   ' }] };
    expect(refused(spaces).field).to.equal('sources[0].writeKey');
    expect(refused(spaces).message).to.match(/spaces only/);
    expect(refused({ sources: [{ name: 'web', writeKey: { env: 'K' } }] }, { K: ' \t ' }).field).to.equal('sources[0].writeKey');
    expect(refused({ adminToken: '  ' }).field).to.equal('adminToken');
  });

  it('refuses a source name of more than 100 characters or with control characters', () => {
    expect(refused({ sources: [{ name: 'n'.repeat(101), writeKey: 'k' }] }).field).to.equal('sources[0].name');
    expect(refused({ sources: [{ name: 'a\u0007b', writeKey: 'k' }] }).field).to.equal('sources[0].name');
    expect(parseConfig({ sources: [{ name: '<script>alert(1)</script> ünïcode', writeKey: 'k' }] }, {}).sources[0]!.name).to.contain('<script>');
  });

  it('refuses a host that is neither an address nor a host name', () => {
    expect(refused({ host: 'not a host!' }).field).to.equal('host');
    expect(parseConfig({ host: '::' }, {}).host).to.equal('::');
    expect(parseConfig({ host: 'localhost' }, {}).host).to.equal('localhost');
  });
});

describe('parseConfig: every problem at once', () => {
  it('throws one ConfigError listing every unset variable, each also in `problems` with its field', () => {
    const config = {
      adminToken: { env: 'ADMIN' },
      notify: { url: { env: 'NOTIFY_URL' }, sharedSecret: { env: 'NOTIFY_SECRET' } },
      sources: [{ name: 'web', writeKey: { env: 'WEB_KEY' } }],
    };
    const error = refused(config, { NOTIFY_URL: 'https://ops.example.test/n' });
    expect(error.problems?.map((p) => p.field)).to.deep.equal(['adminToken', 'sources[0].writeKey', 'notify.sharedSecret']);
    expect(error.field).to.equal('adminToken');
    expect(error.message.split('\n')).to.deep.equal([
      'The config has 3 problems:',
      '- at adminToken: `adminToken` reads the environment variable ADMIN, which is not set or empty',
      '- at sources[0].writeKey: `sources[0].writeKey` reads the environment variable WEB_KEY, which is not set or empty',
      '- at notify.sharedSecret: `notify.sharedSecret` reads the environment variable NOTIFY_SECRET, which is not set or empty',
    ]);
    for (const problem of error.problems!) expect(problem).to.be.instanceOf(ConfigError);
  });

  it("lists a source schema's and a URL filter's problems with the others: each unknown field, each bad one", () => {
    const config = {
      sources: [
        {
          name: 'web',
          writeKey: { env: 'WEB_KEY' },
          schema: { blockedEvent: ['typo'], blockedTypes: ['nope'] },
          destinations: { Webhooks: { webhooks: [{ url: 'https://hooks.example.test/a', filter: { type: ['track'], kinds: [] } }] } },
        },
      ],
    };
    const error = refused(config);
    expect(error.problems?.map((p) => p.field)).to.have.members([
      'sources[0].writeKey',
      'sources[0].schema.blockedEvent',
      'sources[0].schema.blockedTypes[0]',
      'sources[0].destinations.Webhooks.webhooks[0].filter.type',
      'sources[0].destinations.Webhooks.webhooks[0].filter.kinds',
    ]);
  });

  it('one problem is thrown as it is, without `problems`', () => {
    const error = refused({ adminToken: { env: 'ADMIN' } });
    expect(error.field).to.equal('adminToken');
    expect(error.problems).to.equal(undefined);
  });

  it('reads only the parts asked for: the other parts\' secrets and mistakes are not looked at', () => {
    const config = { adminToken: { env: 'ADMIN' }, port: 'nope', sources: [{ name: 'web', writeKey: { env: 'WEB_KEY' } }] };
    expect(parseConfig(config, { ADMIN: 'tok' }, { parts: ['adminToken'] })).to.deep.include({ adminToken: 'tok', port: CONFIG_DEFAULTS.port, sources: [] });
    // An unknown top-level key is still a problem: the file's shape is checked whatever is read.
    expect(() => parseConfig({ ...config, colour: 1 }, { ADMIN: 'tok' }, { parts: ['adminToken'] })).to.throw(ConfigError, 'Unknown field `colour`');
  });
});
