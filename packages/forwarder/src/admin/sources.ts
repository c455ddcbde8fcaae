import type { IncomingMessage, ServerResponse } from 'node:http';
import { booleanOption, ConfigError, ValidationError } from 'eventrelay/internal';
import { parseSources } from '../config';
import { pathSourceName } from '../source-names';
import type { ResolvedSource } from '../config';
import { fail, send } from '../http/server';
import { withBody } from './body';
import type { ApplyResult, SetupResult, SourceManager } from '../registry/manager';

/** Largest body of a setup request, in bytes: a destination with 5 URLs and their headers fits many times. */
export const MAX_SETUP_BODY_BYTES = 64 * 1024;
/** Largest body of `POST /admin/apply` (a config file's sources), in bytes. */
export const MAX_APPLY_BODY_BYTES = 1024 * 1024;

/** What the setup routes need: the manager, and applying a config file's sources. */
export interface SetupRoutesOptions {
  readonly sources: SourceManager;
  readonly applySources: (sources: readonly ResolvedSource[], dryRun: boolean) => Promise<ApplyResult>;
}

type Handler<O> = (options: O, req: IncomingMessage, res: ServerResponse) => Promise<void>;
/** A route's handler per method. */
export type MethodHandlers<O = SetupRoutesOptions> = Partial<Record<'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', Handler<O>>>;

/** Answers of setup routes are never cached: some carry a write key, shown once. */
const NO_STORE = { 'Cache-Control': 'no-store' };

/**
 * The routes of runtime setup, by path: `/admin/sources`, `/admin/sources/{name}`,
 * `.../write-keys`, `.../settings`, `.../destinations/Webhooks`, `.../destinations/Webhooks/test`, and
 * `/admin/apply`. Undefined for another path. A name in the path is percent-decoded and checked
 * like the config file's (`field` "name").
 */
export function setupRoute(path: string): MethodHandlers | undefined {
  if (path === '/admin/sources') {
    return { GET: list, POST: (o, req, res) => withBody(req, res, MAX_SETUP_BODY_BYTES, async (body) => answer(res, 201, await o.sources.create(body))) };
  }
  if (path === '/admin/apply') return { POST: apply };
  const match = /^\/admin\/sources\/([^/]*)(\/write-keys|\/settings|\/destinations\/Webhooks|\/destinations\/Webhooks\/test)?$/.exec(path);
  if (match === null) return undefined;
  const rawName = match[1]!;
  const name = (): string => {
    let decoded: string;
    try {
      decoded = decodeURIComponent(rawName);
    } catch {
      throw new ValidationError('Expected the source name in the path to be percent-encoded UTF-8', 'name');
    }
    return pathSourceName(decoded, 'name');
  };
  switch (match[2]) {
    case undefined:
      return {
        GET: async (o, _req, res) => answer(res, 200, await o.sources.get(name())),
        DELETE: async (o, _req, res) => answer(res, 200, await o.sources.remove(name())),
      };
    case '/write-keys':
      return {
        GET: async (o, _req, res) => {
          const keys = await o.sources.keys(name());
          answer(res, 200, keys.ok ? { ok: true, value: { keys: keys.value } } : keys);
        },
        POST: (o, req, res) => withBody(req, res, MAX_SETUP_BODY_BYTES, async (body) => answer(res, 201, await o.sources.rotate(name(), body)), true),
      };
    case '/settings':
      return {
        GET: async (o, _req, res) => answer(res, 200, await o.sources.settings(name())),
        PUT: (o, req, res) => withBody(req, res, MAX_SETUP_BODY_BYTES, async (body) => answer(res, 200, await o.sources.putSettings(name(), body))),
      };
    case '/destinations/Webhooks':
      return {
        PUT: (o, req, res) => withBody(req, res, MAX_SETUP_BODY_BYTES, async (body) => answer(res, 200, await o.sources.putWebhooks(name(), body))),
        PATCH: (o, req, res) => withBody(req, res, MAX_SETUP_BODY_BYTES, async (body) => answer(res, 200, await o.sources.patchWebhooks(name(), body))),
      };
    default:
      return { POST: (o, req, res) => withBody(req, res, MAX_SETUP_BODY_BYTES, async (body) => answer(res, 200, await o.sources.test(name(), body)), true) };
  }
}

async function list(o: SetupRoutesOptions, _req: IncomingMessage, res: ServerResponse): Promise<void> {
  send(res, 200, { sources: await o.sources.list() }, NO_STORE);
}

/** `POST /admin/apply {sources, dryRun?}`: what `eventrelay apply --url` sends (the file's sources, secrets read). */
async function apply(o: SetupRoutesOptions, req: IncomingMessage, res: ServerResponse): Promise<void> {
  await withBody(req, res, MAX_APPLY_BODY_BYTES, async (body) => {
    const input = body as Record<string, unknown>;
    for (const key of Object.keys(input)) {
      if (key !== 'sources' && key !== 'dryRun') throw new ValidationError(`Unknown field \`${key}\`; expected \`sources\`, \`dryRun\``, key);
    }
    if (input.sources === undefined) throw new ConfigError('Expected `sources` to be a list of sources, got nothing', 'sources');
    const sources = parseSources(input.sources, null);
    const dryRun = booleanOption('dryRun', input.dryRun ?? false);
    const result = await o.applySources(sources, dryRun);
    send(res, 200, { dryRun, applied: result.applied, lines: result.lines, text: result.text }, NO_STORE);
  });
}

function answer<T>(res: ServerResponse, status: number, result: SetupResult<T>): void {
  if (result.ok) send(res, status, result.value, NO_STORE);
  else fail(res, result.status, result.code, result.message, result.field === undefined ? {} : { field: result.field }, NO_STORE);
}
