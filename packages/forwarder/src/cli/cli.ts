#!/usr/bin/env node
import { parseArgs } from 'node:util';
import { ConfigError, EventRelayError } from 'eventrelay/internal';
import { FORWARDER_VERSION as VERSION } from '../version';
import { loadConfigFile } from '../config';
import { Forwarder } from '../service';
import { redactUrl } from '../store/postgres/postgres';
import { statusLine } from './status-line';

const USAGE = `Usage:
  eventrelay serve --config <file> [--port <n>] [--host <address>] [--data <dir>]
  eventrelay check --config <file>
  eventrelay --help | --version

serve   runs the forwarder: ingestion API, durable queue, webhook delivery
check   reads the config file and reports the first problem, if any

Options:
  -c, --config <file>   JSON config (sources, write keys, Webhooks destinations); default eventrelay.config.json
  -p, --port <n>        TCP port (overrides "port"; 0 picks a free one)
      --host <address>  interface to bind (overrides "host")
  -d, --data <dir>      SQLite data directory (overrides "storage.dataDir")

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
  if (command !== 'serve' && command !== 'check') fail(`${command === undefined ? 'a command is needed' : `unknown command "${command}"`}\n\n${USAGE}`, 2);
  if (positionals.length > 1) fail(`unexpected argument "${positionals[1]}"\n\n${USAGE}`, 2);

  let port: number | undefined;
  if (values.port !== undefined) {
    port = Number(values.port);
    if (!/^\d+$/.test(values.port) || port > 65535) fail(`--port expects an integer from 0 to 65535, got "${values.port}"`, 2);
  }

  const configPath = values.config ?? 'eventrelay.config.json';
  let forwarder: Forwarder;
  try {
    const config = loadConfigFile(configPath);
    // `check` builds the forwarder as `serve` does (that opens nothing: no store, no socket), so
    // it refuses exactly what `serve` refuses at start.
    forwarder = new Forwarder(config, values.data === undefined ? {} : { dataDir: values.data });
    if (command === 'check') {
      await forwarder.close();
      out(`${configPath}: OK (${config.sources.length} sources: ${config.sources.map((s) => s.name).join(', ')})\n`);
      return;
    }
    const address = await forwarder.listen({ ...(port === undefined ? {} : { port }), ...(values.host === undefined ? {} : { host: values.host }) });
    const store =
      config.storage.type === 'memory'
        ? 'memory (not durable)'
        : config.storage.type === 'postgres'
          ? `postgres at ${redactUrl(config.storage.url!)} (instance ${forwarder.instanceId})`
          : `sqlite in ${values.data ?? config.storage.dataDir} (synchronous=${config.storage.synchronous})`;
    const sources = config.sources.map((s) => `${s.name} (Webhooks ${s.webhooks === undefined ? 'none' : s.webhooks.enabled ? `on, ${s.webhooks.webhooks.length} URL${s.webhooks.webhooks.length > 1 ? 's' : ''}` : 'off'})`);
    const debuggerLine = !config.debugger ? 'off' : config.adminToken === undefined ? 'off until "adminToken" is set' : `${address.url}/debugger`;
    const metricsLine = config.metricsPath === undefined ? 'off' : `${address.url}${config.metricsPath}`;
    out(
      `eventrelay ${VERSION} listening on ${address.url}\n  sources: ${sources.join(', ')}\n  store: ${store}\n` +
      `  debugger: ${debuggerLine}\n  metrics: ${metricsLine}\n`,
    );
  } catch (error) {
    if (error instanceof ConfigError) fail(`config error${error.field === undefined ? '' : ` at ${error.field}`}: ${error.message}`);
    if (error instanceof EventRelayError) fail(error.message);
    if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE') fail(`the port is in use: ${(error as Error).message}`);
    throw error;
  }

  const live = process.stdout.isTTY === true;
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
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) {
      write(process.stderr, `\neventrelay: ${signal} again, exiting now\n`);
      process.exit(1);
    }
    stopping = true;
    clearInterval(statusTimer);
    out(`${live ? '\n' : ''}eventrelay: ${signal}, finishing attempts in flight...\n`);
    forwarder.close().then(
      () => {
        out('eventrelay: stopped\n');
        process.exit(0);
      },
      (error: Error) => fail(`shutdown failed: ${error.message}`),
    );
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

main(process.argv.slice(2)).catch((error: Error) => fail(error.stack ?? error.message));
