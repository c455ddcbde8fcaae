import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { ConfigError, describeValue, urlOption } from 'eventrelay/internal';
import { compileCheck } from '../validation/check';
import type { Check } from '../validation/check';
import { DESTINATION_DEFAULTS } from '../delivery/options';
import { DEFAULT_DISABLE_AFTER } from '../store/endpoint-state';
import { checkSourceUrls, NetworkPolicy } from '../delivery/network-policy';
import type { NetworkPolicyOptions } from '../delivery/network-policy';
import { refuseControlCharacters } from '../delivery/url-text';
import { ConfigFile } from './shapes';
import { join, Problems, secret } from './problems';
import { readSources } from './sources';
import type { DeliveryConfig, Env, HttpConfig, LogConfig, ResolvedConfig, ResolvedHttp, ResolvedStorage, StorageConfig } from './types';

export const CONFIG_DEFAULTS = {
  host: '127.0.0.1',
  port: 8787,
  storage: {
    type: 'sqlite',
    dataDir: './eventrelay-data',
    synchronous: 'full',
    retention: 24 * 3600_000,
    url: undefined,
    poolSize: 10,
    connectTimeout: 5000,
    lease: 30_000,
    keepDelivered: 0,
    deliveryLog: true,
  },
  metricsPath: '/metrics',
  // The destination's own defaults: one place to change them.
  delivery: { ...DESTINATION_DEFAULTS, disableAfter: DEFAULT_DISABLE_AFTER },
} as const;

/** The top-level parts of a config a command may read on their own (`ParseOptions.parts`). */
export type ConfigPart = 'host' | 'port' | 'adminToken' | 'http' | 'storage' | 'delivery' | 'metrics' | 'debugger' | 'log' | 'sources' | 'notify';

export interface ParseOptions {
  /**
   * Only these parts are read and checked (their secrets included); the others keep their
   * defaults, so that a command reads only the settings it uses (`eventrelay endpoints` reads
   * `adminToken`, not every source's secrets). Default: every part.
   */
  readonly parts?: readonly ConfigPart[];
}

const PARTS: readonly string[] = ['host', 'port', 'adminToken', 'http', 'storage', 'delivery', 'metrics', 'debugger', 'log', 'sources', 'notify'];

let checkFile: Check | undefined;

/**
 * Checks a forwarder config and fills in its defaults. Its shape is checked first, against the
 * schema of config/shapes.ts (every bad field and unknown key); then the rules a schema cannot say
 * (secrets from the environment, URL schemes, unique names and keys, CIDR blocks, rules between
 * fields) on what the schema found well-typed. One problem is thrown as a ConfigError whose
 * `field` is its path (e.g. `sources[1].destinations.Webhooks.webhooks[0].url`) and whose message
 * says what was expected and what came; several as one ConfigError that lists them, with each in
 * `problems` (its `field` the first's). Secrets are never part of a message.
 */
export function parseConfig(input: unknown, env: Env = process.env, options: ParseOptions = {}): ResolvedConfig {
  const uses = (part: string): boolean => options.parts === undefined || options.parts.includes(part as ConfigPart);
  checkFile ??= compileCheck(ConfigFile, { top: 'the config' });
  const problems = new Problems();
  // The parts not asked for are not looked at; an unknown top-level key is a problem whatever is read.
  const asked = (field: string): boolean => {
    const top = /^[^.[]*/.exec(field)![0];
    return !PARTS.includes(top) || uses(top);
  };
  problems.schema(checkFile(input).filter((p) => asked(p.field)));
  if (!problems.typed('')) problems.throwIfAny();
  const raw = input as Record<string, unknown>;
  const take = <T>(check: () => T): T | undefined => problems.take(check);
  const typed = (field: string): boolean => problems.typed(field);

  const host = uses('host') ? ((raw.host ?? CONFIG_DEFAULTS.host) as string) : CONFIG_DEFAULTS.host;
  if (uses('host') && typed('host')) take(() => hostRule(host));
  const port = uses('port') ? ((raw.port ?? CONFIG_DEFAULTS.port) as number) : CONFIG_DEFAULTS.port;
  const adminToken = uses('adminToken') && raw.adminToken !== undefined && problems.clean('adminToken') ? take(() => secret(raw.adminToken, 'adminToken', env, false)) : undefined;
  const http = uses('http') && typed('http') ? (take(() => httpOption(raw.http as HttpConfig | undefined)) ?? httpOption(undefined)) : httpOption(undefined);

  const s = (uses('storage') ? raw.storage : undefined) as StorageConfig | undefined;
  const d = CONFIG_DEFAULTS.storage;
  const type = s?.type ?? d.type;
  const storage: ResolvedStorage = {
    type,
    dataDir: s?.dataDir ?? d.dataDir,
    synchronous: s?.synchronous ?? d.synchronous,
    retention: s?.retention ?? d.retention,
    url: typed('storage.type') && problems.clean('storage.url') ? take(() => storageUrl(type, s?.url, env)) : undefined,
    poolSize: s?.poolSize ?? d.poolSize,
    connectTimeout: s?.connectTimeout ?? d.connectTimeout,
    lease: s?.lease ?? d.lease,
    keepDelivered: s?.keepDelivered ?? d.keepDelivered,
    deliveryLog: s?.deliveryLog ?? d.deliveryLog,
  };
  const metricsPath = uses('metrics') && typed('metrics') ? take(() => metricsOption(raw.metrics)) : CONFIG_DEFAULTS.metricsPath;
  const debuggerOn = uses('debugger') ? ((raw.debugger ?? true) as boolean) : true;
  const l = (uses('log') ? raw.log : undefined) as LogConfig | undefined;
  const log = { level: l?.level ?? 'info', format: l?.format ?? 'auto' } as const;

  const r = (uses('delivery') ? raw.delivery : undefined) as DeliveryConfig | undefined;
  const dd = CONFIG_DEFAULTS.delivery;
  const concurrency = r?.concurrency ?? dd.concurrency;
  const networks: NetworkPolicyOptions = {
    ...(r?.denyNetworks === undefined ? {} : { denyNetworks: r.denyNetworks }),
    ...(r?.allowNetworks === undefined ? {} : { allowNetworks: r.allowNetworks }),
  };
  const delivery = {
    concurrency,
    // 0 until the sources are known: filled in below.
    sourceConcurrency: r?.sourceConcurrency ?? 0,
    timeout: r?.timeout ?? dd.timeout,
    retryWindow: r?.retryWindow ?? dd.retryWindow,
    minRetryDelay: r?.minRetryDelay ?? dd.minRetryDelay,
    maxRetryDelay: r?.maxRetryDelay ?? dd.maxRetryDelay,
    disableAfter: r?.disableAfter ?? dd.disableAfter,
    networks,
    networkPolicy: typed('delivery.denyNetworks') && typed('delivery.allowNetworks') ? take(() => new NetworkPolicy(networks, 'delivery')) : undefined,
  };
  crossFieldRules(storage, delivery, problems);

  const sources = uses('sources') ? readSources(raw.sources, env, problems) : [];
  const notify = uses('notify') && raw.notify !== undefined && typed('notify') ? notifyOption(raw.notify as Record<string, unknown>, env, problems) : undefined;
  const policy = delivery.networkPolicy;
  if (policy !== undefined) {
    take(() => checkSourceUrls(policy, sources));
    if (notify !== undefined) take(() => policy.checkUrl(new URL(notify.url.trim()), 'notify.url'));
  }
  problems.throwIfAny();

  // No problem: every field is set.
  const resolvedDelivery = delivery as ResolvedConfig['delivery'];
  const sourceConcurrencyAuto = resolvedDelivery.sourceConcurrency === 0;
  if (sourceConcurrencyAuto) {
    const delivering = sources.filter((one) => one.webhooks?.enabled === true).length;
    resolvedDelivery.sourceConcurrency = delivering <= 1 ? concurrency : Math.ceil(concurrency / 2);
  }
  const resolved: ResolvedConfig = {
    host,
    port,
    adminToken,
    http,
    storage,
    delivery: resolvedDelivery,
    metricsPath,
    log,
    debugger: debuggerOn,
    sources,
    sourceConcurrencyAuto,
  };
  return notify === undefined ? resolved : { ...resolved, notify };
}

/** The rules between fields: each only when the schema found both fields well-typed. */
type Timing = Pick<ResolvedConfig['delivery'], 'concurrency' | 'sourceConcurrency' | 'timeout' | 'minRetryDelay' | 'maxRetryDelay'>;

function crossFieldRules(storage: ResolvedStorage, delivery: Timing, problems: Problems): void {
  const typed = (...fields: string[]): boolean => fields.every((f) => problems.typed(f));
  const { concurrency, sourceConcurrency } = delivery;
  if (typed('delivery.concurrency', 'delivery.sourceConcurrency') && sourceConcurrency > concurrency) {
    const message = `Expected \`delivery.sourceConcurrency\` to be an integer from 1 to ${concurrency} (\`delivery.concurrency\`), got \`${sourceConcurrency}\` (number)`;
    problems.add(new ConfigError(message, 'delivery.sourceConcurrency'));
  }
  const { lease } = storage;
  if (typed('storage.lease', 'delivery.timeout') && lease < delivery.timeout + 1000) {
    problems.add(
      new ConfigError(
        `Expected \`storage.lease\` (${lease} ms) to be at least \`delivery.timeout\` + 1000 ms (${delivery.timeout + 1000} ms): ` +
        'a lease must outlast an attempt, or another instance may take the delivery over while it runs',
        'storage.lease',
      ),
    );
  }
  const { minRetryDelay, maxRetryDelay } = delivery;
  if (typed('delivery.minRetryDelay', 'delivery.maxRetryDelay') && minRetryDelay > maxRetryDelay) {
    problems.add(new ConfigError(`Expected \`delivery.minRetryDelay\` (${minRetryDelay} ms) to be at most \`delivery.maxRetryDelay\` (${maxRetryDelay} ms)`, 'delivery.minRetryDelay'));
  }
}

/**
 * `host`: an IPv4 or IPv6 address, or a host name; checked here so that a bad one is a ConfigError
 * naming the field, not a socket error at start.
 */
function hostRule(host: string): void {
  if (isIP(host) === 0 && !/^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/.test(host)) {
    throw new ConfigError(`Expected \`host\` to be an IP address (such as "127.0.0.1", "0.0.0.0" or "::") or a host name, got ${describeValue(host)}`, 'host');
  }
}

/** `http`: `{ trustProxy?, publicUrl? }`; `publicUrl` must be an address without credentials, query or fragment. */
function httpOption(raw: HttpConfig | undefined): ResolvedHttp {
  const trust = raw?.trustProxy ?? 0;
  const trustProxy = typeof trust === 'boolean' ? (trust ? 1 : 0) : trust;
  let publicUrl: string | undefined;
  if (raw?.publicUrl !== undefined) {
    const url = urlOption('http.publicUrl', refuseControlCharacters('http.publicUrl', raw.publicUrl), { example: 'https://events.example.com' });
    if (url.search !== '' || url.hash !== '' || url.username !== '' || url.password !== '') {
      throw new ConfigError(`Expected \`http.publicUrl\` to be the forwarder's address, such as "https://events.example.com", without credentials, query or fragment`, 'http.publicUrl');
    }
    publicUrl = `${url.origin}${url.pathname.replace(/\/+$/, '')}`;
  }
  return { trustProxy, publicUrl };
}

/** `storage.url`: required for postgres, refused for the others; never echoed (it may hold a password). */
function storageUrl(type: ResolvedStorage['type'], value: unknown, env: Env): string | undefined {
  if (type !== 'postgres') {
    if (value !== undefined) throw new ConfigError(`\`storage.url\` applies to "type": "postgres" only; the storage type is "${type}"`, 'storage.url');
    return undefined;
  }
  if (value === undefined) {
    throw new ConfigError('`storage.url` is required with "type": "postgres": a URL such as postgres://user@host:5432/db, or { "env": "DATABASE_URL" }', 'storage.url');
  }
  const text = secret(value, 'storage.url', env);
  urlOption('storage.url', text, { example: 'postgres://user@host:5432/db', schemes: ['postgres:', 'postgresql:'] });
  return text;
}

/** `notify`: `{ "url", "sharedSecret" }` (both may be `{ "env": NAME }`); undefined when either has a problem (noted). */
function notifyOption(raw: Record<string, unknown>, env: Env, problems: Problems): { url: string; sharedSecret: string } | undefined {
  const url = problems.clean('notify.url')
    ? problems.take(() => {
        const text = secret(raw.url, 'notify.url', env);
        urlOption('notify.url', refuseControlCharacters('notify.url', text));
        return text;
      })
    : undefined;
  const sharedSecret = problems.clean('notify.sharedSecret') ? problems.take(() => secret(raw.sharedSecret, 'notify.sharedSecret', env, false)) : undefined;
  return url === undefined || sharedSecret === undefined ? undefined : { url, sharedSecret };
}

/** `metrics`: absent (on, at /metrics), `false` (off) or `{ "path": "/..." }`, a path no route of the forwarder takes. */
function metricsOption(value: unknown): string | undefined {
  if (value === undefined) return CONFIG_DEFAULTS.metricsPath;
  if (value === false) return undefined;
  const path = (value as { path?: string }).path;
  if (path === undefined) return CONFIG_DEFAULTS.metricsPath;
  if (!/^\/[A-Za-z0-9._~/-]*[A-Za-z0-9._~-]$/.test(path) || /^\/(v1|admin|debugger|health|stats)(\/|$)/.test(path)) {
    throw new ConfigError(`Expected \`${join('metrics', 'path')}\` to be a path such as "/metrics", not under /v1, /admin or /debugger, got ${describeValue(path)}`, 'metrics.path');
  }
  return path;
}

/** Where a JSON syntax error is, without V8's excerpt of the text (which may hold a secret). */
function jsonErrorWhere(text: string, error: unknown): string {
  const message = error instanceof Error ? error.message : '';
  const position = /at position (\d+)/.exec(message)?.[1];
  if (position === undefined) return /end of JSON input/.test(message) ? 'it ends too early' : 'an unexpected token';
  const before = text.slice(0, Number(position)).split('\n');
  return `syntax error at line ${before.length}, column ${(before.at(-1)?.length ?? 0) + 1}`;
}

/** Reads and checks a JSON config file; a syntax error is a ConfigError that names the file. */
export function loadConfigFile(path: string, env: Env = process.env, options: ParseOptions = {}): ResolvedConfig {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new ConfigError(`Cannot read the config file ${path}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`, '');
  }
  let json: unknown;
  try {
    // A byte order mark (some editors write one) is not part of the JSON.
    json = JSON.parse(text.startsWith('\ufeff') ? text.slice(1) : text);
  } catch (error) {
    throw new ConfigError(`The config file ${path} is not valid JSON (${jsonErrorWhere(text, error)}); check quotes, commas and braces`, '');
  }
  return parseConfig(json, env, options);
}
