import type { IncomingMessage, ServerResponse } from 'node:http';
import { booleanOption, ConfigError, ValidationError } from 'eventrelay/internal';
import { parseSources } from '../config';
import type { ResolvedSource } from '../config';
import { fail, send } from '../http/server';
import type { ApplyResult, SetupResult, SourceManager } from '../registry/manager';
import type { HandlerInputs } from '../http/routes';

/** Applying a config file's sources to the registry (`runtime/sources.ts`'s `Sources`). */
export interface SourceSetup {
  apply(sources: readonly ResolvedSource[], dryRun: boolean): Promise<ApplyResult>;
}

/** What the setup routes need: the manager, and applying a config file's sources. */
export interface SetupRoutesOptions {
  readonly sources: SourceManager;
  readonly setup: SourceSetup;
}

/** What a route's handler gets: the path's parameters (decoded, a name checked), the query and the body (checked as the route declares). */
export interface AdminInput {
  readonly params: Readonly<Record<string, string>>;
  readonly query: Readonly<Record<string, unknown>>;
  readonly body: Record<string, unknown>;
}

/** A route's handler, untyped: what dispatch calls. */
export type AdminHandler<O> = (options: O, input: AdminInput, req: IncomingMessage, res: ServerResponse) => Promise<void>;

/** Handlers by operationId, each given its route's input typed from the route's schemas. */
export type AdminHandlers<O> = {
  readonly [Id in keyof HandlerInputs]?: (options: O, input: HandlerInputs[Id], req: IncomingMessage, res: ServerResponse) => Promise<void>;
};

/** Answers of setup routes are never cached: some carry a write key, shown once. */
const NO_STORE = { 'Cache-Control': 'no-store' };

/**
 * The handlers of runtime setup, by operationId (declared in http/routes/sources.ts): sources,
 * their write keys, settings and Webhooks destination, and `/admin/apply`.
 */
export const SETUP_HANDLERS = {
  listSources: (o, _input, _req, res) => list(o, res),
  createSource: async (o, { body }, _req, res) => answer(res, 201, await o.sources.create(body)),
  applySources: (o, { body }, _req, res) => apply(o, body, res),
  getSource: async (o, { params }, _req, res) => answer(res, 200, await o.sources.get(params.name)),
  deleteSource: async (o, { params }, _req, res) => answer(res, 200, await o.sources.remove(params.name)),
  listWriteKeys: async (o, { params }, _req, res) => {
    const keys = await o.sources.keys(params.name);
    answer(res, 200, keys.ok ? { ok: true, value: { keys: keys.value } } : keys);
  },
  rotateWriteKey: async (o, { params, body }, _req, res) => answer(res, 201, await o.sources.rotate(params.name, body)),
  getSourceSettings: async (o, { params }, _req, res) => answer(res, 200, await o.sources.settings(params.name)),
  putSourceSettings: async (o, { params, body }, _req, res) => answer(res, 200, await o.sources.putSettings(params.name, body)),
  putWebhooks: async (o, { params, body }, _req, res) => answer(res, 200, await o.sources.putWebhooks(params.name, body)),
  patchWebhooks: async (o, { params, body }, _req, res) => answer(res, 200, await o.sources.patchWebhooks(params.name, body)),
  testWebhooks: async (o, { params, body }, _req, res) => answer(res, 200, await o.sources.test(params.name, body)),
} satisfies AdminHandlers<SetupRoutesOptions>;

async function list(o: SetupRoutesOptions, res: ServerResponse): Promise<void> {
  send(res, 200, { sources: await o.sources.list() }, NO_STORE);
}

/** `POST /admin/apply {sources, dryRun?}`: what `eventrelay apply --url` sends (the file's sources, secrets read). */
async function apply(o: SetupRoutesOptions, input: Record<string, unknown>, res: ServerResponse): Promise<void> {
  for (const key of Object.keys(input)) {
    if (key !== 'sources' && key !== 'dryRun') throw new ValidationError(`Unknown field \`${key}\`; expected \`sources\`, \`dryRun\``, key);
  }
  if (input.sources === undefined) throw new ConfigError('Expected `sources` to be a list of sources, got nothing', 'sources');
  const sources = parseSources(input.sources, null);
  const dryRun = booleanOption('dryRun', input.dryRun ?? false);
  const result = await o.setup.apply(sources, dryRun);
  send(res, 200, { dryRun, applied: result.applied, lines: result.lines, text: result.text }, NO_STORE);
}

function answer<T>(res: ServerResponse, status: number, result: SetupResult<T>): void {
  if (result.ok) send(res, status, result.value, NO_STORE);
  else fail(res, result.status, result.code, result.message, result.field === undefined ? {} : { field: result.field }, NO_STORE);
}
