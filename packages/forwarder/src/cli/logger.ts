import pino from 'pino';
import type { Logger } from 'pino';
import build from 'pino-pretty';
import type { ResolvedConfig } from '../config';

/**
 * The logger of `eventrelay serve`: pino, the ecosystem's JSON logger (levels, ISO times, a
 * synchronous write per line, redaction), rather than hand-made JSON. One object per line on
 * stdout, `{"level":"info","time":"...","msg":"...",...fields}`; on a terminal (or with
 * `log.format: "pretty"`) pino-pretty's readable lines instead. Nothing the forwarder logs holds a
 * secret, a key or a body; the redaction is a second guard for fields of those names.
 */
export function operatorLogger(options: ResolvedConfig['log'], out: NodeJS.WriteStream & { readonly fd: number } = process.stdout): Logger {
  const pretty = options.format === 'pretty' || (options.format === 'auto' && out.isTTY === true);
  const destination = pretty
    ? build({ colorize: out.isTTY === true, sync: true, destination: out.fd, ignore: 'pid,hostname,service', translateTime: 'SYS:HH:MM:ss.l' })
    : pino.destination({ dest: out.fd, sync: true });
  // A reader that went away (a closed pipe) is not a reason to stop forwarding.
  destination.on('error', () => {});
  return pino(
    {
      level: options.level,
      base: { service: 'eventrelay' },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      redact: { paths: ['writeKey', 'sharedSecret', 'secret', 'token', 'adminToken', 'body', 'authorization', '*.writeKey', '*.sharedSecret', '*.authorization'], censor: '[redacted]' },
    },
    destination,
  );
}
