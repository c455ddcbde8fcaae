import { hasCredentials, jsonText, printable, shownUrl } from './printable';

/**
 * The CLI's side of the admin API: `eventrelay endpoints`, `deliveries`, `replay` and `recover`
 * talk to a running forwarder (`--url`) with the config file's `adminToken` as Bearer token, and
 * never print it. A refusal or an unreachable forwarder is a `CliFailure` the command prints.
 */
export class CliFailure extends Error {
  constructor(
    message: string,
    /** The exit code: 2 for a usage error, 1 for the rest. */
    readonly exitCode = 1,
  ) {
    super(message);
  }
}

export interface AdminClient {
  call<T>(method: 'GET' | 'POST', path: string, body?: unknown): Promise<T>;
}

/** A client of the admin API at `url` (its base URL); `command` names the command in messages. */
export function adminClient(command: string, url: string | undefined, adminToken: string | undefined): AdminClient {
  if (url === undefined || !/^https?:\/\/[^/]+/.test(url)) throw new CliFailure(`${command} needs --url, the running forwarder's base URL, such as http://127.0.0.1:8787`, 2);
  // fetch refuses a URL with credentials, and its error repeats the URL, password included.
  if (hasCredentials(url)) throw new CliFailure(`--url holds a user name or password (${shownUrl(url)}); leave them out: the admin API takes the config file's adminToken`, 2);
  if (adminToken === undefined) throw new CliFailure(`${command} needs "adminToken" in the config file: the admin API takes it as a Bearer token`);
  const base = url.replace(/\/+$/, '');
  return {
    async call<T>(method: 'GET' | 'POST', path: string, body?: unknown): Promise<T> {
      let response: Response;
      try {
        response = await fetch(`${base}${path}`, {
          method,
          headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${adminToken}` },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        });
      } catch (error) {
        throw new CliFailure(`cannot reach the forwarder at ${shownUrl(url)}: ${printable(String((error as { cause?: { code?: string } }).cause?.code ?? (error as Error).message)).replaceAll(url, shownUrl(url))}`);
      }
      const answer = (await response.json().catch(() => undefined)) as (T & { error?: { message: string; field?: string } }) | undefined;
      if (!response.ok || answer === undefined) {
        const error = (answer as { error?: { message: string; field?: string } } | undefined)?.error;
        throw new CliFailure(`the forwarder refused (HTTP ${response.status})${error === undefined ? '' : `: ${printable(String(error.message))}${error.field === undefined ? '' : ` (${printable(String(error.field))})`}`}`);
      }
      return answer;
    },
  };
}

/** A delivery log row as `GET /admin/messages` gives it (the fields the table shows). */
interface Row {
  readonly id: number;
  readonly source: string;
  readonly messageId: string;
  readonly type: string | null;
  /** The track event name (null for other types). */
  readonly event: string | null;
  readonly status: string;
  readonly attempts: number;
  readonly receivedAt: string;
  readonly reason: string | null;
}

/** Fixed-width columns, the last one free. */
function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)].join('\n') + '\n';
}

export interface DeliveriesOptions {
  readonly status?: string;
  readonly source?: string;
  /** A track event name, exactly. */
  readonly event?: string;
  readonly limit?: string;
  readonly json: boolean;
}

/** `eventrelay deliveries`: the delivery log's newest lines, filtered, as a table or JSON. */
export async function listDeliveries(client: AdminClient, options: DeliveriesOptions): Promise<string> {
  const params = new URLSearchParams();
  if (options.status !== undefined) params.set('status', options.status);
  if (options.source !== undefined) params.set('source', options.source);
  if (options.event !== undefined) params.set('event', options.event);
  params.set('limit', options.limit ?? '50');
  const page = await client.call<{ items: Row[]; nextCursor: string | null }>('GET', `/admin/messages?${params}`);
  if (options.json) return `${jsonText(await withAttempts(client, page.items), 2)}\n`;
  if (page.items.length === 0) return 'no deliveries match\n';
  // Every cell escaped: a messageId, an event name or a reason is the sender's text (see printable.ts).
  const rows = page.items.map((r) => [String(r.id), r.status, r.source, r.type ?? '-', r.event ?? '-', r.messageId, String(r.attempts), r.receivedAt, r.reason ?? ''].map((cell) => printable(String(cell))));
  return table(['id', 'status', 'source', 'type', 'event', 'messageId', 'attempts', 'received', 'reason'], rows) + (page.nextCursor === null ? '' : `(more: --limit to see more)\n`);
}

/**
 * Rows with their `attemptLog` (each attempt with the receiver's `responseBody`) from `GET
 * /admin/deliveries/{id}`, for the rows that had attempts, a few requests at a time: the CLI's
 * view of what receivers answered.
 */
async function withAttempts(client: AdminClient, rows: readonly Row[]): Promise<object[]> {
  const out: object[] = [];
  for (let i = 0; i < rows.length; i += 8) {
    const chunk = rows.slice(i, i + 8);
    const details = await Promise.all(
      chunk.map((r) => (r.attempts === 0 ? undefined : client.call<{ attemptLog: unknown[] }>('GET', `/admin/deliveries/${r.id}`))),
    );
    chunk.forEach((r, j) => out.push({ ...r, attemptLog: details[j]?.attemptLog ?? [] }));
  }
  return out;
}

/** `eventrelay replay ID`: queues a failed (or kept delivered) delivery again. */
export async function replayDelivery(client: AdminClient, id: string | undefined, json: boolean): Promise<string> {
  if (id === undefined || !/^\d+$/.test(id)) throw new CliFailure('replay needs the delivery id, as `eventrelay deliveries` lists it: eventrelay replay 42', 2);
  const result = await client.call<{ id: number; series: number; state: string }>('POST', `/admin/deliveries/${id}/replay`, {});
  return json ? `${jsonText(result)}\n` : `delivery ${printable(String(result.id))} queued again (attempt series ${printable(String(result.series))})\n`;
}

export interface RecoverOptions {
  readonly source?: string;
  readonly since?: string;
  readonly until?: string;
  readonly json: boolean;
}

/** `eventrelay recover --source S --since T [--until T]`: queues again the source's failed deliveries of the window. */
export async function recoverDeliveries(client: AdminClient, options: RecoverOptions): Promise<string> {
  if (options.source === undefined || options.source === '') throw new CliFailure('recover needs --source <name>', 2);
  if (options.since === undefined) throw new CliFailure('recover needs --since <time>, an ISO 8601 time such as 2026-11-27T08:00:00Z', 2);
  const body = { source: options.source, since: options.since, ...(options.until === undefined ? {} : { until: options.until }) };
  const result = await client.call<{ source: string; since: string; until: string | null; queued: number }>('POST', '/admin/recover', body);
  return options.json ? `${jsonText(result)}\n` : printable(`${result.queued} failed deliveries of ${result.source} since ${result.since} queued again`) + '\n';
}
