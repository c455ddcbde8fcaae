import type { ServerResponse } from 'node:http';
import { fail, send } from '../http/server';
import type { AdminHandlers } from './sources';
import type { EndpointGuard, EndpointUrl } from '../delivery/endpoint-guard';
import type { SetupRefusal, SetupResult } from '../registry/manager';
import type { StoredWebhooks } from '../store/contract';

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

  /** The source's URLs (as shown: no password, no query) when every one is disabled; else undefined. */
  allDisabled(source: string): readonly string[] | undefined {
    const listed = this.list(source);
    return listed.ok && listed.value.length > 0 && listed.value.every((e) => e.disabled) ? listed.value.map((e) => e.url) : undefined;
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
  async enable(source: string, body: { readonly url: string }): Promise<SetupResult<EnabledEndpoint>> {
    const wanted = body.url;
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

function answer<T>(res: ServerResponse, status: number, result: SetupResult<T>): void {
  if (result.ok) send(res, status, result.value, { 'Cache-Control': 'no-store' });
  else fail(res, result.status, result.code, result.message, result.field === undefined ? {} : { field: result.field }, { 'Cache-Control': 'no-store' });
}

function admin(o: EndpointRoutesOptions): EndpointAdmin {
  if (o.endpoints === undefined) throw new Error('endpoint routes without an EndpointAdmin');
  return o.endpoints;
}

/** The handlers of `GET .../destinations/Webhooks/endpoints` and `POST .../endpoints/enable` (http/routes/endpoints.ts). */
export const ENDPOINT_HANDLERS = {
  listEndpoints: async (o, { params }, _req, res) => {
    const listed = admin(o).list(params.name);
    answer(res, 200, listed.ok ? { ok: true, value: { endpoints: listed.value } } : listed);
  },
  enableEndpoint: async (o, { params, body }, _req, res) => answer(res, 200, await admin(o).enable(params.name, body)),
} satisfies AdminHandlers<EndpointRoutesOptions>;
