import { lookup as dnsLookup } from 'node:dns';
import type { LookupAddress, LookupOptions } from 'node:dns';
import { BlockList, isIP } from 'node:net';
import type { buildConnector } from 'undici';
import { ConfigError, describeValue, NetworkError } from 'eventrelay/internal';

/**
 * Which addresses outbound requests (deliveries, test events, notices) may connect to. Checked on
 * every address a host name resolves to, when the connection is made (so a DNS answer cannot get
 * around it), and on literal addresses when a URL is set. An address is refused when it is in a
 * built-in network or in `denyNetworks`, or when `allowNetworks` is set and it is in none of them.
 */
export interface NetworkPolicyOptions {
  /** CIDR blocks (`10.0.0.0/8`, `fc00::/7`) or addresses refused on top of the built-in ones. Default none. */
  readonly denyNetworks?: readonly string[];
  /** When set: the only CIDR blocks or addresses requests may go to (the built-in ones stay refused). Default: any. */
  readonly allowNetworks?: readonly string[];
}

/**
 * Refused whatever the settings say: no webhook receiver lives there, and the cloud metadata
 * service (which hands out credentials) does.
 */
export const BUILT_IN_DENIED: readonly { readonly network: string; readonly why: string }[] = [
  { network: '169.254.0.0/16', why: 'link-local, where cloud metadata services answer' },
  { network: 'fe80::/10', why: 'link-local' },
  { network: 'fd00:ec2::254/128', why: 'cloud metadata' },
  { network: '0.0.0.0/8', why: 'unspecified' },
  { network: '::/128', why: 'unspecified' },
  { network: '224.0.0.0/4', why: 'multicast' },
  { network: 'ff00::/8', why: 'multicast' },
  { network: '255.255.255.255/32', why: 'broadcast' },
  // Addresses in it stand for IPv4 ones of a network's own choosing (RFC 8215), cloud metadata
  // among them, embedded where the prefix length says: refused whole rather than guessed.
  { network: '64:ff9b:1::/48', why: 'local-use NAT64 (RFC 8215), which reaches IPv4 networks through a translator' },
];

/** Names of cloud metadata services, refused like their address (which DNS may not give outside the cloud). */
const DENIED_HOSTS = new Set(['metadata.google.internal']);

export const NETWORK_POLICY_CODE = 'ERR_NETWORK_POLICY';

interface Rule {
  readonly network: string;
  readonly family: 'ipv4' | 'ipv6';
  readonly address: string;
  readonly prefix: number;
  readonly why: string;
}

/** One CIDR block or address, checked; `field` names it in a ConfigError. */
function parseNetwork(value: unknown, field: string, why: string): Rule {
  const text = typeof value === 'string' ? value.trim() : undefined;
  const [address = '', prefixText, extra] = text?.split('/') ?? [];
  const version = isIP(address);
  const max = version === 4 ? 32 : 128;
  const prefix = prefixText === undefined ? max : /^\d{1,3}$/.test(prefixText) ? Number(prefixText) : NaN;
  if (text === undefined || version === 0 || extra !== undefined || !(prefix >= 0 && prefix <= max)) {
    throw new ConfigError(`Expected \`${field}\` to be a CIDR block such as "10.0.0.0/8" or "fc00::/7", or an address, got ${describeValue(value)}`, field);
  }
  const mapped = version === 6 ? embeddedIPv4(address) : undefined;
  // An IPv4-mapped block (::ffff:10.0.0.0/104) is the IPv4 block it maps.
  if (mapped !== undefined && prefix >= 96) return { network: text, family: 'ipv4', address: mapped, prefix: prefix - 96, why };
  return { network: text, family: version === 4 ? 'ipv4' : 'ipv6', address, prefix, why };
}

function networkList(value: unknown, field: string, why: string): Rule[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw new ConfigError(`Expected \`${field}\` to be a list of CIDR blocks such as ["10.0.0.0/8"], got ${describeValue(value)}`, field);
  return value.map((item: unknown, i) => parseNetwork(item, `${field}[${i}]`, why));
}

/** The eight 16-bit groups of an IPv6 address (a valid one: `isIP` said 6). */
function ipv6Groups(address: string): number[] {
  // A dotted IPv4 tail (::ffff:1.2.3.4) is two groups.
  const text = address
    .split('%')[0]!
    .replace(/(\d+)\.(\d+)\.(\d+)\.(\d+)$/, (_, a: string, b: string, c: string, d: string) => `${((+a << 8) | +b).toString(16)}:${((+c << 8) | +d).toString(16)}`);
  const parse = (part: string): number[] => (part === '' ? [] : part.split(':').map((group) => parseInt(group, 16)));
  const [head = '', rest] = text.split('::');
  const front = parse(head);
  if (rest === undefined) return front;
  const back = parse(rest);
  return [...front, ...new Array<number>(8 - front.length - back.length).fill(0), ...back];
}

/** The IPv4 address an IPv6 one stands for: IPv4-mapped (`::ffff:a.b.c.d`) or NAT64's well-known prefix (`64:ff9b::/96`). */
function embeddedIPv4(address: string): string | undefined {
  const g = ipv6Groups(address);
  const mapped = g.slice(0, 5).every((x) => x === 0) && g[5] === 0xffff;
  const nat64 = g[0] === 0x64 && g[1] === 0xff9b && g.slice(2, 6).every((x) => x === 0);
  if (!mapped && !nat64) return undefined;
  return [g[6]! >> 8, g[6]! & 255, g[7]! >> 8, g[7]! & 255].join('.');
}

/** An address as the policy sees it: an IPv4 one embedded in IPv6 is that IPv4 address. */
function normalize(address: string): { address: string; family: 'ipv4' | 'ipv6' } | undefined {
  const bare = address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address;
  const version = isIP(bare);
  if (version === 4) return { address: bare, family: 'ipv4' };
  if (version !== 6) return undefined;
  const ipv4 = embeddedIPv4(bare);
  return ipv4 === undefined ? { address: bare, family: 'ipv6' } : { address: ipv4, family: 'ipv4' };
}

function matcher(rules: readonly Rule[]): (address: string, family: 'ipv4' | 'ipv6') => Rule | undefined {
  const lists = rules.map((rule) => {
    const list = new BlockList();
    list.addSubnet(rule.address, rule.prefix, rule.family);
    return { rule, list };
  });
  return (address, family) => lists.find(({ rule, list }) => rule.family === family && list.check(address, family))?.rule;
}

/** A refused connection: a NetworkError with code `ERR_NETWORK_POLICY`, final for that URL's attempt (not retried). */
export function networkPolicyError(message: string): NetworkError {
  return new NetworkError(message, { code: NETWORK_POLICY_CODE, retryable: false });
}

type Match = (address: string, family: 'ipv4' | 'ipv6') => Rule | undefined;

/**
 * A network policy, built once from `denyNetworks` and `allowNetworks` (a ConfigError naming the
 * entry for a bad one; `field` is the path of their object, `delivery` in the config file).
 */
export class NetworkPolicy {
  readonly #denied: Match;
  readonly #allowed: Match | undefined;
  readonly #allowField: string;

  constructor(options: NetworkPolicyOptions = {}, field = '') {
    const at = (key: string): string => (field === '' ? key : `${field}.${key}`);
    this.#allowField = at('allowNetworks');
    const deny = networkList(options.denyNetworks, at('denyNetworks'), `listed in \`${at('denyNetworks')}\``);
    const builtIn = BUILT_IN_DENIED.map((d) => parseNetwork(d.network, '', `${d.why}: refused by default`));
    this.#denied = matcher([...builtIn, ...deny]);
    if (options.allowNetworks !== undefined) {
      const allow = networkList(options.allowNetworks, this.#allowField, '');
      if (allow.length === 0) {
        throw new ConfigError(`Expected \`${this.#allowField}\` to list at least one CIDR block; leave it out to allow every network not denied`, this.#allowField);
      }
      this.#allowed = matcher(allow);
    }
  }

  /** Why an address is refused (\`in 10.0.0.0/8 (...)\`); undefined when it is allowed or not an IP address. */
  refusal(address: string): string | undefined {
    const ip = normalize(address);
    if (ip === undefined) return undefined;
    const denied = this.#denied(ip.address, ip.family);
    if (denied !== undefined) return `${ip.address}, in ${denied.network} (${denied.why})`;
    if (this.#allowed !== undefined && this.#allowed(ip.address, ip.family) === undefined) return `${ip.address}, outside \`${this.#allowField}\``;
    return undefined;
  }

  /** Why a URL's host is refused before any lookup: a literal address refused, or a metadata service's name. */
  hostRefusal(hostname: string): string | undefined {
    const host = hostname.toLowerCase().replace(/\.$/, '');
    if (DENIED_HOSTS.has(host)) return `${host}, a cloud metadata service (refused by default)`;
    return this.refusal(host);
  }

  /**
   * Checks a URL when it is set (config file, admin API): a ConfigError naming `field` when its
   * host is a literal address the policy refuses (in any spelling the URL parser reads as one).
   * Host names are checked on what they resolve to, when connecting.
   */
  checkUrl(url: URL, field: string): void {
    const why = this.hostRefusal(url.hostname);
    if (why !== undefined) throw new ConfigError(`Expected \`${field}\` to reach an address the network policy allows; its host is ${why}`, field);
  }

  /**
   * A \`lookup\` for \`net.connect\`: resolves as \`dns.lookup\` does, then refuses the connection
   * when any address of the name is refused, so that no pick among the answers reaches one.
   */
  readonly lookup = (
    hostname: string,
    options: LookupOptions,
    callback: (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void,
  ): void => {
    dnsLookup(hostname, { ...options, all: true }, (error, addresses) => {
      if (error !== null) return callback(error, '');
      for (const { address } of addresses) {
        const why = this.refusal(address);
        if (why !== undefined) return callback(networkPolicyError(`${hostname} resolves to ${why}`), '');
      }
      if (options.all === true) callback(null, addresses);
      else callback(null, addresses[0]!.address, addresses[0]!.family);
    });
  };

  /**
   * undici's connector with the policy: a literal address is checked before connecting (Node
   * looks nothing up for it), a name through \`lookup\`. A refusal names the origin, never a path,
   * query or credentials.
   */
  connector(connect: buildConnector.connector): buildConnector.connector {
    return (options, callback) => {
      const origin = `${options.protocol}//${options.hostname.includes(':') ? `[${options.hostname}]` : options.hostname}:${options.port}`;
      const refused = (why: string): void => callback(networkPolicyError(`Request to ${origin} refused by the network policy: ${why}`), null);
      const why = this.hostRefusal(options.hostname);
      if (why !== undefined) return refused(`its host is ${why}`);
      connect(options, (...args) => {
        const error = args[0];
        if (error !== null && (error as { code?: unknown }).code === NETWORK_POLICY_CODE) refused(error.message);
        else callback(...args);
      });
    };
  }
}

/** What `checkSourceUrls` reads of a source: its webhook URLs. */
interface SourceUrls {
  readonly webhooks?: { readonly webhooks: readonly { readonly url: string }[] } | undefined;
}

/**
 * Checks the webhook URLs of a list of sources (the config file's, or `POST /admin/apply`'s) when
 * they are set: a ConfigError naming `sources[i].destinations.Webhooks.webhooks[j].url`.
 */
export function checkSourceUrls(policy: NetworkPolicy, sources: readonly SourceUrls[]): void {
  sources.forEach((source, i) =>
    source.webhooks?.webhooks.forEach((webhook, j) => policy.checkUrl(new URL(webhook.url.trim()), `sources[${i}].destinations.Webhooks.webhooks[${j}].url`)),
  );
}
