import { describe, it } from 'mocha';
import { expect } from 'chai';
import { parseConfig } from '../../src/config';
import { ConfigError } from '../../../eventrelay/src/errors';
import { checkSourceName, pathSourceName } from '../../src/source-names';
import { promises as dns } from 'node:dns';
import { NetworkPolicy } from '../../src/delivery/network-policy';
import { WebhookDestination } from '../../src/delivery/destination';
import { refused } from './config-refusal';

function source(name: string, url = 'https://example.test/hook', extra: object = {}): object {
  return { name, writeKey: `wk-${Math.random()}`, destinations: { Webhooks: { webhooks: [{ url, ...extra }] } } };
}

/** Names that look like another name, or hide what they hold. */
const HOSTILE_NAMES: readonly [string, string][] = [
  ['right-to-left override', 'web\u202egpj.exe'],
  ['left-to-right embedding', '\u202aweb'],
  ['first strong isolate', 'web\u2068x\u2069'],
  ['right-to-left mark', 'web\u200f'],
  ['Arabic letter mark', 'we\u061cb'],
  ['zero-width space', 'we\u200bb'],
  ['word joiner', 'we\u2060b'],
  ['byte order mark', '\ufeffweb'],
  ['zero-width joiner', 'we\u200db'],
  ['soft hyphen', 'we\u00adb'],
  ['Hangul filler', 'web\u3164'],
  ['line separator', 'web\u2028prod'],
  ['paragraph separator', 'web\u2029prod'],
  ['line feed', 'web\nprod'],
  ['tab', 'web\tprod'],
  ['C1 control', 'web\u0085'],
  ['trailing space', 'web '],
  ['leading space', ' web'],
  ['trailing no-break space', 'web\u00a0'],
  ['leading ideographic space', '\u3000web'],
];

describe('source names: NFC, without control, invisible or direction-changing characters', () => {
  for (const [what, name] of HOSTILE_NAMES) {
    it(`refuses a name with a ${what}, in the config file, naming the field and not echoing the name`, () => {
      const error = refused({ sources: [source('ok'), source(name)] });
      expect(error.field).to.equal('sources[1].name');
      expect(error.message).not.to.contain(name);
    });
  }

  it('takes a name in NFD as its NFC spelling: two spellings of café are one name', () => {
    const nfd = 'cafe\u0301';
    expect(checkSourceName(nfd, 'name')).to.equal('caf\u00e9');
    expect(parseConfig({ sources: [source(nfd)] }, {}).sources[0]!.name).to.equal('caf\u00e9');
    const error = refused({ sources: [source('caf\u00e9'), source(nfd)] });
    expect(error.field).to.equal('sources[1].name');
    expect(error.message).to.contain('repeats the name');
  });

  it('keeps names with inner spaces, accents and other scripts', () => {
    for (const name of ['web prod', 'Größe', 'ウェブ', 'سوق', 'a-b_c.d']) expect(checkSourceName(name, 'name')).to.equal(name);
  });

  it('in an admin path, a name kept from before these rules is still found as stored; one with a control character never', () => {
    expect(pathSourceName('web ', 'name')).to.equal('web ');
    expect(pathSourceName('we\u200bb', 'name')).to.equal('we\u200bb');
    expect(pathSourceName('cafe\u0301', 'name')).to.equal('caf\u00e9');
    expect(() => pathSourceName('a\nb', 'name')).to.throw(ConfigError);
  });

  it('counts the length in NFC', () => {
    expect(checkSourceName('e\u0301'.repeat(100), 'name')).to.have.length(100);
    expect(() => checkSourceName('x'.repeat(101), 'name')).to.throw(ConfigError, /at most 100/);
  });
});

describe('URLs with control characters are refused, never rewritten', () => {
  const forms: readonly [string, string][] = [
    ['CR LF (a header smuggled in)', 'https://example.test/hook\r\nX-Injected: 1'],
    ['LF', 'https://example.test/ho\nok'],
    ['TAB', 'https://exa\tmple.test/hook'],
    ['NUL', 'https://example.test/hook\u0000'],
    ['DEL', 'https://example.test/\u007fhook'],
    ['C1 control', 'https://example.test/\u0085hook'],
  ];
  for (const [what, url] of forms) {
    it(`a webhook URL with ${what}: refused in the config file and by WebhookDestination, naming the field`, () => {
      const error = refused({ sources: [source('web', url)] });
      expect(error.field).to.equal('sources[0].destinations.Webhooks.webhooks[0].url');
      expect(error.message).to.match(/control characters/);
      expect(() => new WebhookDestination({ webhooks: [{ url }] })).to.throw(ConfigError, /control characters/).with.property('field', 'webhooks[0].url');
    });
  }

  it('a notice URL with CR LF is refused as `notify.url`', () => {
    const error = refused({ notify: { url: 'https://ops.example.test/n\r\nX: 1', sharedSecret: 's' } });
    expect(error.field).to.equal('notify.url');
  });
});

describe('rateLimit.perSecond: at least 0.01', () => {
  it('refuses a limit below the floor, naming the field, and takes the floor itself', () => {
    for (const perSecond of [1e-9, 0.009, 0]) {
      const error = refused({ sources: [source('web', 'https://example.test/hook', { rateLimit: { perSecond } })] });
      expect(error.field).to.equal('sources[0].destinations.Webhooks.webhooks[0].rateLimit.perSecond');
      expect(error.message).to.contain('0.01');
    }
    const config = parseConfig({ sources: [source('web', 'https://example.test/hook', { rateLimit: { perSecond: 0.01 } })] }, {});
    expect(config.sources[0]!.webhooks!.webhooks[0]!.rateLimit).to.deep.equal({ perSecond: 0.01 });
  });
});

describe('delivery.denyNetworks and delivery.allowNetworks in the config file', () => {
  it('refuses a webhook or notice URL whose literal address is denied, by default and by the lists', () => {
    expect(refused({ sources: [source('web', 'http://2852039166/latest')] }).field).to.equal('sources[0].destinations.Webhooks.webhooks[0].url');
    expect(refused({ notify: { url: 'http://[fd00:ec2::254]/', sharedSecret: 's' } }).field).to.equal('notify.url');
    expect(refused({ notify: { url: 'http://metadata.google.internal/', sharedSecret: 's' } }).field).to.equal('notify.url');
    const deny = { denyNetworks: ['10.0.0.0/8', 'fc00::/7'] };
    expect(refused({ delivery: deny, sources: [source('web', 'http://10.1.2.3/')] }).message).to.contain('10.0.0.0/8');
    expect(refused({ delivery: deny, sources: [source('web', 'http://[fd12::1]/')] }).message).to.contain('fc00::/7');
    expect(refused({ delivery: deny, sources: [source('web', 'http://[::ffff:10.0.0.1]/')] }).message).to.contain('10.0.0.0/8');
    const allow = { allowNetworks: ['192.0.2.0/24'] };
    expect(refused({ delivery: allow, sources: [source('web', 'http://198.51.100.1/')] }).message).to.contain('allowNetworks');
    expect(parseConfig({ delivery: allow, sources: [source('web', 'http://192.0.2.7/')] }, {}).delivery.networks.allowNetworks).to.deep.equal(['192.0.2.0/24']);
    // A host name is checked on what it resolves to, when connecting.
    expect(parseConfig({ delivery: allow, sources: [source('web', 'https://hooks.example.test/')] }, {}).sources).to.have.length(1);
  });

  it('refuses a malformed list or entry, naming it', () => {
    expect(refused({ delivery: { denyNetworks: '10.0.0.0/8' } }).field).to.equal('delivery.denyNetworks');
    expect(refused({ delivery: { denyNetworks: ['10.0.0.0/33'] } }).field).to.equal('delivery.denyNetworks[0]');
    expect(refused({ delivery: { denyNetworks: ['10.0.0.0/8', 'example.com'] } }).field).to.equal('delivery.denyNetworks[1]');
    expect(refused({ delivery: { allowNetworks: ['fc00::/129'] } }).field).to.equal('delivery.allowNetworks[0]');
    expect(refused({ delivery: { allowNetworks: [] } }).field).to.equal('delivery.allowNetworks');
  });
});

describe('NetworkPolicy', () => {
  const policy = new NetworkPolicy({ denyNetworks: ['10.0.0.0/8'] });

  it('refuses the built-in networks in their IPv4, IPv6, IPv4-mapped and NAT64 forms', () => {
    for (const address of ['169.254.169.254', '169.254.0.1', 'fe80::1', 'fd00:ec2::254', '0.0.0.0', '::', '224.0.0.251', 'ff02::fb', '255.255.255.255']) {
      expect(policy.refusal(address), address).to.be.a('string');
    }
    for (const address of ['::ffff:169.254.169.254', '::ffff:a9fe:a9fe', '0:0:0:0:0:ffff:a9fe:a9fe', '64:ff9b::a9fe:a9fe', '[::ffff:169.254.169.254]']) {
      expect(policy.refusal(address), address).to.contain('169.254.169.254, in 169.254.0.0/16');
    }
    expect(policy.refusal('::ffff:10.9.8.7')).to.contain('10.0.0.0/8');
  });

  it('refuses the local-use NAT64 prefix 64:ff9b:1::/48 (RFC 8215) by default, whatever IPv4 address it embeds', () => {
    for (const address of ['64:ff9b:1::a9fe:a9fe', '64:ff9b:1:a9fe:a9:fe00::', '64:ff9b:1:ffff::1', '[64:ff9b:1::1]']) {
      expect(policy.refusal(address), address).to.contain('64:ff9b:1::/48');
    }
    expect(new NetworkPolicy({ allowNetworks: ['64:ff9b::/32'] }).refusal('64:ff9b:1::1')).to.contain('64:ff9b:1::/48');
    // Next to it, outside the /48: judged as any other address.
    expect(policy.refusal('64:ff9b:2::1')).to.equal(undefined);
  });

  it('allows loopback, private and public addresses unless listed', () => {
    for (const address of ['127.0.0.1', '::1', '192.168.1.1', '172.16.0.1', 'fd12::1', '8.8.8.8', '2001:db8::1', '::ffff:8.8.8.8']) {
      expect(policy.refusal(address), address).to.equal(undefined);
    }
  });

  it('allowNetworks: only those, and the built-in ones stay refused inside them', () => {
    const only = new NetworkPolicy({ allowNetworks: ['169.254.0.0/16', '192.0.2.0/24'] });
    expect(only.refusal('192.0.2.1')).to.equal(undefined);
    expect(only.refusal('198.51.100.1')).to.contain('outside');
    expect(only.refusal('169.254.169.254')).to.contain('refused by default');
    const both = new NetworkPolicy({ allowNetworks: ['10.0.0.0/8'], denyNetworks: ['10.1.0.0/16'] });
    expect(both.refusal('10.2.0.1')).to.equal(undefined);
    expect(both.refusal('10.1.0.1')).to.contain('10.1.0.0/16');
  });

  it('refuses a name when any of its addresses is refused, whichever comes first', async () => {
    const addresses = await dns.lookup('localhost', { all: true });
    const loopbackOnly = new NetworkPolicy({ denyNetworks: ['127.0.0.0/8'] });
    const error = await new Promise<Error | null>((resolve) => loopbackOnly.lookup('localhost', { all: true }, (e) => resolve(e)));
    expect(addresses.some((a) => a.address.startsWith('127.'))).to.equal(true);
    expect(error).to.have.property('code', 'ERR_NETWORK_POLICY');
    expect(error).to.have.property('retryable', false);
    const answer = await new Promise<unknown>((resolve) => new NetworkPolicy().lookup('localhost', {}, (e, address) => resolve(e ?? address)));
    expect(addresses.map((a) => a.address)).to.include(answer);
  });
});
