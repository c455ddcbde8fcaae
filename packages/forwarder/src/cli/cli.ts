#!/usr/bin/env node
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { ConfigError, EventRelayError } from 'eventrelay/internal';
import { FORWARDER_VERSION as VERSION } from '../version';
import { loadConfigFile } from '../config';
import type { ConfigPart, ResolvedConfig } from '../config';
import { Forwarder } from '../service';
import { applyToStore } from '../registry/apply';
import { redactUrl } from '../redact';
import { statusLine } from './status-line';
import { operatorLogger } from './logger';
import { hasCredentials, printable, shownUrl } from './printable';
import { adminClient, CliFailure, listDeliveries, recoverDeliveries, replayDelivery } from './admin-client';
import type { AdminClient } from './admin-client';
import { LOG_LEVELS } from '../config';
import type { LogLevel } from '../config';

const USAGE = `Usage:
  eventrelay serve --config <file> [--port <n>] [--host <address>] [--data <dir>] [--log-level <level>]
  eventrelay check --config <file>
  eventrelay apply --config <file> [--dry-run] [--url <forwarder URL>] [--data <dir>]
  eventrelay endpoints --config <file> --url <forwarder URL> --source <name> [--enable <webhook URL>]
  eventrelay deliveries --config <file> --url <forwarder URL> [--status <status>] [--source <name>] [--event <name>] [--limit <n>] [--json]
  eventrelay replay <id> --config <file> --url <forwarder URL> [--json]
  eventrelay recover --config <file> --url <forwarder URL> --source <name> --since <time> [--until <time>] [--json]
  eventrelay --help | --version

serve   runs the forwarder: ingestion API, durable queue, webhook delivery
check   reads the config file and reports every problem, if any (every unset variable at once)
apply   makes the store's sources match the file's and prints the difference
        (--dry-run: print only); through a running forwarder's admin API with --url
endpoints  shows the webhook URLs of a source, disabled or not and why, through a running
        forwarder's admin API; --enable sends to a disabled URL again
deliveries  lists the delivery log, newest first (--status failed, --source, --event), as a table or
            --json (with each delivery's attempts and the receivers' answers)
replay  queues a delivery of the log again (failed, or delivered with its body kept)
recover queues again every failed delivery of a source received since --since (ISO 8601)
        (endpoints, deliveries, replay and recover read only "adminToken" from the file)

Options:
  -c, --config <file>   JSON config (sources, write keys, Webhooks destinations); default eventrelay.config.json
  -p, --port <n>        TCP port (overrides "port"; 0 picks a free one)
      --host <address>  interface to bind (overrides "host")
  -d, --data <dir>      SQLite data directory (overrides "storage.dataDir")
      --log-level <level>  debug, info, warn, error or silent (overrides "log.level")

serve logs one JSON object per line on stdout (readable lines on a terminal): start and stop,
refused ingestion, deliveries failed for good, endpoints failing (with the receiver's answer) and
recovered, endpoints disabled and enabled, store faults.

Secrets in the config may be written as { "env": "NAME" } to read them from the environment.
SIGINT or SIGTERM shuts down gracefully; a second signal exits at once.`;

/**
 * Output that never takes the process down: when the reader of stdout or stderr goes away (a
 * closed pipe, `| head -1`), Node reports EPIPE as an 'error' event, which would crash the CLI
 * in the middle of a graceful shutdown. Such a stream is then left alone; the work goes on.
 */
const gone = new WeakSet<NodeJS.WriteStream>();
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', () => gone.add(stream));
}

function write(stream: NodeJS.WriteStream, text: string): void {
  if (gone.has(stream) || stream.destroyed) return;
  try {
    stream.write(text);
  } catch {
    gone.add(stream);
  }
}

const out = (text: string): void => write(process.stdout, text);

function fail(message: string, code = 1): never {
  write(process.stderr, `eventrelay: ${message}\n`);
  process.exit(code);
}

async function main(argv: readonly string[]): Promise<void> {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      allowPositionals: true,
      options: {
        config: { type: 'string', short: 'c' },
        port: { type: 'string', short: 'p' },
        host: { type: 'string' },
        data: { type: 'string', short: 'd' },
        'dry-run': { type: 'boolean' },
        url: { type: 'string' },
        source: { type: 'string' },
        enable: { type: 'string' },
        'log-level': { type: 'string' },
        status: { type: 'string' },
        event: { type: 'string' },
        limit: { type: 'string' },
        since: { type: 'string' },
        until: { type: 'string' },
        json: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
        version: { type: 'boolean', short: 'v' },
      },
    });
  } catch (error) {
    fail(`${(error as Error).message}\n\n${USAGE}`, 2);
  }
  const { values, positionals } = parsed;
  if (values.help) {
    out(`${USAGE}\n`);
    return;
  }
  if (values.version) {
    out(`${VERSION}\n`);
    return;
  }
  const command = positionals[0];
  const commands = ['serve', 'check', 'apply', 'endpoints', 'deliveries', 'replay', 'recover'] as const;
  if (!(commands as readonly (string | undefined)[]).includes(command)) {
    fail(`${command === undefined ? 'a command is needed' : `unknown command "${command}"`}\n\n${USAGE}`, 2);
  }
  const remote = command === 'endpoints' || command === 'deliveries' || command === 'replay' || command === 'recover';
  if (command !== 'apply' && values['dry-run'] === true) fail(`--dry-run goes with apply\n\n${USAGE}`, 2);
  if (command !== 'apply' && !remote && values.url !== undefined) fail(`--url goes with apply, endpoints, deliveries, replay and recover\n\n${USAGE}`, 2);
  if (command !== 'endpoints' && command !== 'deliveries' && command !== 'recover' && values.source !== undefined) fail(`--source goes with endpoints, deliveries and recover\n\n${USAGE}`, 2);
  if (command !== 'endpoints' && values.enable !== undefined) fail(`--enable goes with endpoints\n\n${USAGE}`, 2);
  for (const [flag, allowed] of [['status', ['deliveries']], ['event', ['deliveries']], ['limit', ['deliveries']], ['since', ['recover']], ['until', ['recover']], ['json', ['deliveries', 'replay', 'recover']]] as const) {
    if (values[flag] !== undefined && !(allowed as readonly string[]).includes(command!)) fail(`--${flag} goes with ${allowed.join(' and ')}\n\n${USAGE}`, 2);
  }
  if (positionals.length > (command === 'replay' ? 2 : 1)) fail(`unexpected argument "${positionals[command === 'replay' ? 2 : 1]}"\n\n${USAGE}`, 2);
  const logLevel = values['log-level'];
  if (logLevel !== undefined && !(LOG_LEVELS as readonly string[]).includes(logLevel)) fail(`--log-level expects one of ${LOG_LEVELS.join(', ')}, got "${logLevel}"`, 2);
  if (command !== 'serve' && logLevel !== undefined) fail(`--log-level goes with serve\n\n${USAGE}`, 2);

  let port: number | undefined;
  if (values.port !== undefined) {
    port = Number(values.port);
    if (!/^\d+$/.test(values.port) || port > 65535) fail(`--port expects an integer from 0 to 65535, got "${values.port}"`, 2);
  }

  const configPath = values.config ?? 'eventrelay.config.json';
  // From the start: a signal that comes before the server is up (a supervisor that stops it at
  // once) is kept and handled once it is, instead of ending the process without a word.
  const signals: { handler?: (signal: NodeJS.Signals) => void; early?: NodeJS.Signals } = {};
  const signalled = (signal: NodeJS.Signals) => (signals.handler === undefined ? (signals.early ??= signal) : signals.handler(signal));
  if (command === 'serve') {
    process.on('SIGINT', signalled);
    process.on('SIGTERM', signalled);
  }
  let forwarder: Forwarder;
  let logger: ReturnType<typeof operatorLogger> | undefined;
  try {
    // Each command reads the settings it uses, no others: `endpoints` needs the admin token, not
    // every source's secrets; `apply` the sources and where they go (the store, or --url's token).
    const parts: readonly ConfigPart[] | undefined =
      remote
        ? ['adminToken']
        : command === 'apply'
          ? values.url === undefined ? ['storage', 'delivery', 'sources'] : ['adminToken', 'delivery', 'sources']
          : undefined;
    const config = loadConfigFile(configPath, process.env, parts === undefined ? {} : { parts });
    if (command === 'endpoints') {
      await endpoints(config, { url: values.url, source: values.source, enable: values.enable });
      return;
    }
    if (command === 'deliveries' || command === 'replay' || command === 'recover') {
      await operate(command, config, values, positionals[1]);
      return;
    }
    if (command === 'apply') {
      await apply(configPath, config, { dryRun: values['dry-run'] === true, url: values.url, dataDir: values.data });
      return;
    }
    // `check` builds the forwarder as `serve` does (that opens nothing: no store, no socket), so
    // it refuses exactly what `serve` refuses at start.
    logger = command === 'serve' ? operatorLogger({ ...config.log, ...(logLevel === undefined ? {} : { level: logLevel as LogLevel }) }) : undefined;
    forwarder = new Forwarder(config, { ...(values.data === undefined ? {} : { dataDir: values.data }), ...(logger === undefined ? {} : { logger }) });
    if (command === 'check') {
      await forwarder.close();
      out(`${configPath}: OK (${config.sources.length} sources${config.sources.length === 0 ? '' : `: ${config.sources.map((s) => s.name).join(', ')}`})\n`);
      return;
    }
    const address = await forwarder.listen({ ...(port === undefined ? {} : { port }), ...(values.host === undefined ? {} : { host: values.host }) });
    const store =
      config.storage.type === 'memory'
        ? 'memory (not durable)'
        : config.storage.type === 'postgres'
          ? `postgres at ${redactUrl(config.storage.url!)} (instance ${forwarder.instanceId})`
          : `sqlite in ${values.data ?? config.storage.dataDir} (synchronous=${config.storage.synchronous})`;
    // What the store holds now: the file's sources applied, and those made through the admin API.
    const sources = (await forwarder.listSources()).map((s) => {
      const w = s.destinations.Webhooks;
      return `${s.name} (Webhooks ${w === null ? 'none' : w.enabled ? `on, ${w.webhooks.length} URL${w.webhooks.length > 1 ? 's' : ''}` : 'off'})`;
    });
    const debuggerLine = !config.debugger ? 'off' : config.adminToken === undefined ? 'off until "adminToken" is set' : `${address.url}/debugger`;
    const metricsLine = config.metricsPath === undefined ? 'off' : `${address.url}${config.metricsPath}`;
    logger!.info(
      { event: 'started', version: VERSION, url: address.url, sources: sources.length === 0 ? 'none yet (POST /admin/sources)' : sources.join(', '), store, debugger: debuggerLine, metrics: metricsLine },
      `listening on ${address.url} (eventrelay ${VERSION})`,
    );
  } catch (error) {
    if (error instanceof ConfigError) {
      const all = error.problems ?? [error];
      if (all.length === 1) fail(`config error ${where(error.field)}: ${error.message}`);
      // Every problem of the file at once, one a line.
      fail(`${all.length} config errors in ${configPath}:\n${all.map((p) => `  config error ${where(p.field)}: ${p.message}`).join('\n')}`);
    }
    // A store error names its field too (storage.url, storage.dataDir).
    const field = (error as { field?: unknown }).field;
    if (error instanceof EventRelayError) fail(typeof field === 'string' ? `error ${where(field)}: ${error.message}` : error.message);
    const socket = listenError(error as NodeJS.ErrnoException, values.port ?? undefined);
    if (socket !== undefined) fail(socket);
    throw error;
  }

  const log = logger!;
  const live = process.stdout.isTTY === true && log.level !== 'silent';
  let statusTimer: NodeJS.Timeout | undefined;
  if (live) {
    const draw = () => {
      forwarder.stats().then(
        (stats) => out(`\r\x1b[K${statusLine(stats)}`),
        () => {},
      );
    };
    statusTimer = setInterval(draw, 1000);
    draw();
  }

  let stopping = false;
  const stop = (signal: NodeJS.Signals | 'npx gone') => {
    if (stopping) {
      write(process.stderr, `\neventrelay: ${signal} again, exiting now\n`);
      process.exit(1);
    }
    stopping = true;
    clearInterval(statusTimer);
    clearInterval(supervisor);
    if (live) out('\n');
    const why = signal === 'npx gone' ? 'the npx (npm exec) process that started it ended' : signal;
    log.info({ event: 'stopping', signal }, `${why}, finishing attempts in flight`);
    forwarder.close().then(
      () => {
        log.info({ event: 'stopped' }, 'stopped');
        process.exit(0);
      },
      (error: Error) => fail(`shutdown failed: ${error.message}`),
    );
  };
  // npm exec does not pass a supervisor's SIGTERM on: it ends and leaves this process running.
  const supervisor = watchNpmExec(() => stop('npx gone'));
  signals.handler = stop;
  if (signals.early !== undefined) stop(signals.early);
}

/**
 * Under `npx` (`npm exec`), which ends on SIGTERM without passing the signal to the command it
 * runs: checks every second that the processes between it and this one (npm, and the shell npm
 * starts the command with) still run, and calls `gone` when one has ended, so that a supervisor
 * that stops `npx eventrelay serve` leaves no server behind. Elsewhere nothing is watched (a
 * server started with nohup or `&` outlives its shell, as it should).
 */
function watchNpmExec(gone: () => void): NodeJS.Timeout | undefined {
  if (process.env.npm_command !== 'exec') return undefined;
  const parent = process.ppid;
  const ancestors = [parent, parentOf(parent)].filter((pid): pid is number => pid !== undefined && pid > 1);
  const timer = setInterval(() => {
    if (process.ppid !== parent || !ancestors.every(alive)) gone();
  }, 1000);
  timer.unref();
  return timer;
}

/** The parent of `pid`, where /proc tells it (Linux); undefined elsewhere. */
function parentOf(pid: number): number | undefined {
  try {
    // /proc/PID/stat: "pid (command) state ppid ...", the command in parentheses may hold spaces.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    return Number.isInteger(ppid) ? ppid : undefined;
  } catch {
    return undefined;
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it runs, under another user.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Where a config problem is: its field, or the whole file (field ''). */
function where(field: string | undefined): string {
  return field === undefined || field === '' ? 'in the file (top level)' : `at ${field}`;
}

/**
 * A socket error of `listen` in the config's terms: the field to change (`port` or `host`), so
 * that every refused config names one. Undefined for another error.
 */
function listenError(error: NodeJS.ErrnoException, portFlag: string | undefined): string | undefined {
  const port = portFlag === undefined ? 'port' : 'port (--port)';
  switch (error.code) {
    case 'EADDRINUSE':
      return `config error at ${port}: the port is in use by another process; choose another (0 picks a free one)`;
    case 'EACCES':
      return `config error at ${port}: this user may not listen on it (ports below 1024 need privileges); choose one from 1024`;
    case 'EADDRNOTAVAIL':
      return 'config error at host: it is not an address of this machine; use 127.0.0.1, 0.0.0.0 (every interface) or one of its addresses';
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
    case 'EAI_NONAME':
      return 'config error at host: the host name does not resolve to an address of this machine';
    default:
      return undefined;
  }
}

/** `eventrelay apply`: prints the difference, then what was done. */
interface ApplyOptions {
  readonly dryRun: boolean;
  readonly url: string | undefined;
  readonly dataDir: string | undefined;
}

async function apply(configPath: string, config: ResolvedConfig, options: ApplyOptions): Promise<void> {
  let result: Applied;
  try {
    result = options.url === undefined ? await applyToStore(config, options) : await applyThrough(options.url, config, options.dryRun);
  } catch (error) {
    if ((error as { code?: string }).code === 'ERR_STORE_LOCKED') {
      fail(`${(error as Error).message}\nA forwarder runs on it: apply through it with --url http://HOST:PORT (its admin API, with the file's adminToken).`);
    }
    throw error;
  }
  const target = options.url !== undefined ? `the forwarder at ${shownUrl(options.url)}` : describeStore(config, options.dataDir);
  // The difference comes from the forwarder with --url: one printable line at a time.
  const text = result.text.split('\n').map(printable).join('\n');
  out(`${configPath} against ${target}:\n${text === '' ? '(no sources in the file or the store)' : text}\n`);
  const changed = result.lines.filter((l) => l.action === 'create' || l.action === 'update').length;
  if (options.dryRun) out(`dry run: nothing written (${changed} source${changed === 1 ? '' : 's'} would change)\n`);
  else out(result.applied ? `applied: ${changed} source${changed === 1 ? '' : 's'} changed; every forwarder on the store serves them within 2 s\n` : 'nothing to change\n');
}

/** `apply --url`: through a running forwarder's admin API (`POST /admin/apply`), with the file's admin token. */
type Applied = { text: string; lines: readonly { action: string }[]; applied: boolean };

async function applyThrough(url: string, config: ResolvedConfig, dryRun: boolean): Promise<Applied> {
  if (!/^https?:\/\/[^/]+/.test(url)) fail(`--url expects the forwarder's base URL, such as http://127.0.0.1:8787, got something else`, 2);
  if (hasCredentials(url)) {
    fail(`--url holds a user name or password (${shownUrl(url)}); leave them out: the admin API takes the config file's adminToken`, 2);
  }
  if (config.adminToken === undefined) fail('apply --url needs "adminToken" in the config file: the admin API takes it as a Bearer token');
  const sources = config.sources.map((s) => ({
    name: s.name,
    writeKey: s.writeKey,
    ...(s.webhooks === undefined ? {} : { destinations: { Webhooks: s.webhooks } }),
  }));
  let response: Response;
  try {
    response = await fetch(`${url.replace(/\/+$/, '')}/admin/apply`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${config.adminToken}` },
      body: JSON.stringify({ sources, dryRun }),
    });
  } catch (error) {
    fail(`cannot reach the forwarder at ${shownUrl(url)}: ${printable(String((error as { cause?: { code?: string } }).cause?.code ?? (error as Error).message))}`);
  }
  const answer = (await response.json().catch(() => undefined)) as
    | { text: string; lines: { action: string }[]; applied: boolean; error?: { message: string; field?: string } }
    | undefined;
  if (!response.ok || answer === undefined) {
    const error = answer?.error;
    fail(`the forwarder refused the file (HTTP ${response.status})${error === undefined ? '' : `${error.field === undefined ? '' : ` at ${printable(String(error.field))}`}: ${printable(String(error.message))}`}`);
  }
  return answer;
}

function describeStore(config: ResolvedConfig, dataDir: string | undefined): string {
  if (config.storage.type === 'postgres') return `postgres at ${redactUrl(config.storage.url!)}`;
  return `sqlite in ${dataDir ?? config.storage.dataDir}`;
}

main(process.argv.slice(2)).catch((error: Error) => fail(error.stack ?? error.message));

/** `eventrelay endpoints`: a source's webhook URLs through a running forwarder's admin API; `--enable` one. */
/** `deliveries`, `replay` and `recover`: the delivery log through a running forwarder's admin API. */
async function operate(command: 'deliveries' | 'replay' | 'recover', config: ResolvedConfig, values: Record<string, string | boolean | undefined>, id: string | undefined): Promise<void> {
  const text = (name: string) => values[name] as string | undefined;
  const json = values.json === true;
  try {
    const client = adminClient(command, text('url'), config.adminToken);
    if (command === 'deliveries') out(await listDeliveries(client, { status: text('status'), source: text('source'), event: text('event'), limit: text('limit'), json }));
    else if (command === 'replay') out(await replayDelivery(client, id, json));
    else out(await recoverDeliveries(client, { source: text('source'), since: text('since'), until: text('until'), json }));
  } catch (error) {
    if (error instanceof CliFailure) fail(error.exitCode === 2 ? `${error.message}\n\n${USAGE}` : error.message, error.exitCode);
    throw error;
  }
}

async function endpoints(config: ResolvedConfig, options: { url?: string; source?: string; enable?: string }): Promise<void> {
  const { url, source } = options;
  let client: AdminClient;
  try {
    client = adminClient('endpoints', url, config.adminToken);
  } catch (error) {
    fail(error instanceof CliFailure && error.exitCode === 2 ? `${error.message}\n\n${USAGE}` : (error as Error).message, (error as CliFailure).exitCode ?? 1);
  }
  if (source === undefined || source === '') fail(`endpoints needs --source <name>\n\n${USAGE}`, 2);
  const base = `/admin/sources/${encodeURIComponent(source)}/destinations/Webhooks/endpoints`;
  const call = async (path: string, body?: unknown): Promise<Record<string, unknown>> => {
    try {
      return await client.call<Record<string, unknown>>(body === undefined ? 'GET' : 'POST', `${base}${path}`, body);
    } catch (error) {
      if (error instanceof CliFailure) fail(error.message, error.exitCode);
      throw error;
    }
  };
  if (options.enable !== undefined) {
    const enabled = (await call('/enable', { url: options.enable })) as { url: string; wasDisabled: boolean };
    const shown = printable(String(enabled.url));
    out(enabled.wasDisabled ? `enabled: ${shown}; deliveries go to it again (every instance within 1 s)\n` : `${shown} was not disabled: nothing changed\n`);
  }
  const listed = (await call('')) as { endpoints: { url: string; disabled: boolean; disabledAt: string | null; reason: string | null; failures: number }[] };
  out(`${printable(source)}:\n`);
  for (const e of listed.endpoints) {
    const line = e.disabled ? `  disabled  ${e.url} since ${e.disabledAt}: ${e.reason}` : `  enabled   ${e.url}${e.failures > 0 ? ` (${e.failures} failed attempts in a row)` : ''}`;
    out(`${printable(line)}\n`);
  }
}
