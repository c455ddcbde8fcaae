import type { IncomingMessage, ServerResponse } from 'node:http';
import { isPlainObject, ValidationError } from 'eventrelay/internal';
import { pathSourceName } from '../source-names';
import { fail, send } from '../http/server';
import { withBody } from './body';
import type { EndpointGuard, EndpointUrl } from '../delivery/endpoint-guard';
import type { SetupRefusal, SetupResult } from '../registry/manager';
import type { StoredWebhooks } from '../store/contract';

/** Largest body of an endpoint request, in bytes. */
const MAX_BODY_BYTES = 64 * 1024;

/** One URL of a source's Webhooks destination, as the admin API shows it (no credentials, no query). */
export interface ShownEndpoint {
  readonly url: string;
  readonly disabled: boolean;
  /** ISO 8601, or null while enabled. */
  readonly disabledAt: string | null;
  /** Why it was disabled, or null. */
  readonly reason: string | null;
  /** Failed attempts since the last success. */
  readonly failures: number;
  /** Start of the current run of failures (ISO 8601), or null after a success. */
  readonly failingSince: string | null;
  readonly lastError: string | null;
}

export interface EnabledEndpoint {
  readonly source: string;
  readonly url: string;
  /** False when the URL was not disabled (nothing changed). */
  readonly wasDisabled: boolean;
}

/** What the endpoint routes need of the forwarder. */
export interface EndpointHost {
  /** The source's stored Webhooks settings; undefined for a source without them; null for no such source. */
  webhooksOf(source: string): StoredWebhooks | undefined | null;
  readonly guard: EndpointGuard;
}

function iso(ms: number | undefined): string | null {
  return ms === undefined ? null : new Date(ms).toISOString();
}

function notFound(message: string, field?: string): SetupRefusal {
  return { ok: false, status: 404, code: 'not_found', message, ...(field === undefined ? {} : { field }) };
}

/**
 * The admin side of endpoint protection: the state of each URL of a source, and enabling a
 * disabled one (`POST .../destinations/Webhooks/endpoints/enable { "url" }`).
 */
export class EndpointAdmin {
  constructor(private readonly host: EndpointHost) {}

  /** The URLs of the source's destination, in order, with the full URL of each (never shown). */
  private urls(source: string): SetupResult<{ full: readonly string[]; urls: readonly EndpointUrl[] }> {
    const webhooks = this.host.webhooksOf(source);
    if (webhooks === null) return notFound(`No source ${JSON.stringify(source)}`, 'name');
    if (webhooks === undefined) return notFound(`The source ${JSON.stringify(source)} has no Webhooks destination`);
    return { ok: true, value: { full: webhooks.webhooks.map((w) => w.url), urls: this.host.guard.urlsOf(source, webhooks) } };
  }

  list(source: string): SetupResult<ShownEndpoint[]> {
    const found = this.urls(source);
    if (!found.ok) return found;
    return {
      ok: true,
      value: found.value.urls.map((u) => {
        const state = this.host.guard.state(source, u.key);
        return {
          url: u.url,
          disabled: state?.disabledAt !== undefined,
          disabledAt: iso(state?.disabledAt),
          reason: state?.disabledReason ?? null,
          failures: state?.failures ?? 0,
          failingSince: iso(state?.failingSince),
          lastError: state?.lastError ?? null,
        };
      }),
    };
  }

  /**
   * Enables a URL of the source's destination, named by its full URL or as the API shows it (when
   * that names one URL only). Its deliveries go to it again at once, on every instance within 1 s.
   */
  async enable(source: string, body: unknown): Promise<SetupResult<EnabledEndpoint>> {
    if (!isPlainObject(body)) throw new ValidationError('Expected a JSON object body: { "url": "..." }');
    for (const key of Object.keys(body)) if (key !== 'url') throw new ValidationError(`Unknown field \`${key}\`; expected \`url\``, key);
    const wanted = body.url;
    if (typeof wanted !== 'string' || wanted === '') throw new ValidationError('Expected `url` to be one of the destination\'s URLs (as configured, or as the API shows it)', 'url');
    const found = this.urls(source);
    if (!found.ok) return found;
    const { full, urls } = found.value;
    let index = full.indexOf(wanted);
    if (index < 0) {
      const shown = urls.flatMap((u, i) => (u.url === wanted ? [i] : []));
      if (shown.length > 1) {
        return { ok: false, status: 409, code: 'conflict', message: 'Several URLs of the destination are shown so; give the whole URL, with its query', field: 'url' };
      }
      index = shown[0] ?? -1;
    }
    if (index < 0) return notFound(`The Webhooks destination of ${JSON.stringify(source)} has no such URL`, 'url');
    const url = urls[index]!;
    const before = await this.host.guard.enable(source, url);
    return { ok: true, value: { source, url: url.url, wasDisabled: before !== undefined } };
  }
}

/** The host the routes get from the admin API's options. */
export interface EndpointRoutesOptions {
  readonly endpoints?: EndpointAdmin;
}

type Handler = (options: EndpointRoutesOptions, req: IncomingMessage, res: ServerResponse) => Promise<void>;

function answer<T>(res: ServerResponse, status: number, result: SetupResult<T>): void {
  if (result.ok) send(res, status, result.value, { 'Cache-Control': 'no-store' });
  else fail(res, result.status, result.code, result.message, result.field === undefined ? {} : { field: result.field }, { 'Cache-Control': 'no-store' });
}

/**
 * `GET /admin/sources/{name}/destinations/Webhooks/endpoints` and
 * `POST .../endpoints/enable`; undefined for another path.
 */
export function endpointRoute(path: string): Partial<Record<'GET' | 'POST', Handler>> | undefined {
  const match = /^\/admin\/sources\/([^/]*)\/destinations\/Webhooks\/endpoints(\/enable)?$/.exec(path);
  if (match === null) return undefined;
  const name = (): string => {
    let decoded: string;
    try {
      decoded = decodeURIComponent(match[1]!);
    } catch {
      throw new ValidationError('Expected the source name in the path to be percent-encoded UTF-8', 'name');
    }
    return pathSourceName(decoded, 'name');
  };
  const admin = (o: EndpointRoutesOptions): EndpointAdmin => {
    if (o.endpoints === undefined) throw new Error('endpoint routes without an EndpointAdmin');
    return o.endpoints;
  };
  if (match[2] === undefined) {
    return {
      GET: async (o, _req, res) => {
        const listed = admin(o).list(name());
        answer(res, 200, listed.ok ? { ok: true, value: { endpoints: listed.value } } : listed);
      },
    };
  }
  return {
    POST: (o, req, res) => withBody(req, res, MAX_BODY_BYTES, async (body) => answer(res, 200, await admin(o).enable(name(), body))),
  };
}
