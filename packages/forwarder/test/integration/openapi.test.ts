import { after, before, describe, it } from 'mocha';
import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import type { IncomingHttpHeaders } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { Validator } from '@seriousme/openapi-schema-validator';
import { createConfig, lintFromString } from '@redocly/openapi-core';
import Ajv2020 from 'ajv/dist/2020';
import type { ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { createForwarder } from '../../src/service';
import type { Forwarder } from '../../src/service';
import { apiDocument, ROUTES } from '../../src/http/routes';
import { FORWARDER_VERSION } from '../../src/version';
import { basic, useReceiver, waitFor } from './helpers';

/**
 * The OpenAPI document, generated from the route declarations (src/http/routes/), against an
 * independent validator and Redocly's recommended rules, and against the real answers of every
 * route: each status, content type and body a forwarder sends is looked up in the document and
 * validated with its schema.
 */

const ADMIN = 'openapi-admin-token';
const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;

type Json = any;
const file: Json = apiDocument();

/** Each documented path with an example of it, its parameters filled in. */
function concrete(template: string, values: Record<string, string> = {}): string {
  return template.replace(/\{([^}]*)\}/g, (_, name: string) => values[name] ?? ({ id: '987654', name: 'nobody', writeKey: 'unknown-key' } as Record<string, string>)[name]!);
}

interface Answer {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly text: string;
  readonly json: Json;
}

interface CallOptions {
  readonly headers?: Record<string, string>;
  readonly body?: unknown;
  /** Resolve once the headers are in and drop the connection (Server-Sent Events). */
  readonly headersOnly?: boolean;
  readonly admin?: boolean;
}

/** Answers checked against the document, and which operations answered 2xx. */
class DocumentCheck {
  readonly succeeded = new Set<string>();
  private readonly ajv = new Ajv2020({ allErrors: true, strictTypes: true, allowUnionTypes: true });
  private readonly compiled = new Map<object, ValidateFunction>();

  constructor(readonly doc: Json) {
    addFormats(this.ajv);
    // OpenAPI's own keywords beside JSON Schema's (its dialect); anything else is a typo and refused.
    this.ajv.addVocabulary(['discriminator', 'xml', 'externalDocs', 'example']);
  }

  validator(schema: object): ValidateFunction {
    let validate = this.compiled.get(schema);
    if (validate === undefined) {
      validate = this.ajv.compile(schema);
      this.compiled.set(schema, validate);
    }
    return validate;
  }

  /** The documented template of a concrete path: an exact one first, then one with parameters. */
  template(path: string): string | undefined {
    const templates = Object.keys(this.doc.paths);
    if (templates.includes(path)) return path;
    return templates.find((t) => t.includes('{') && new RegExp(`^${t.replace(/[.]/g, '\\.').replace(/\{[^}]*\}/g, '[^/]+')}$`).test(path));
  }

  /** Throws unless the answer is one the document describes for this request. */
  check(method: string, path: string, answer: Answer): void {
    const where = `${method} ${path} answered ${answer.status} ${answer.text.slice(0, 300)}`;
    const template = this.template(path.split('?')[0]!);
    let response: Json;
    if (template === undefined) {
      expect(answer.status, `${where}: not a documented path, so a 404`).to.equal(404);
      response = { content: { 'application/json': { schema: this.doc.components.schemas.Error } } };
    } else {
      const operation = this.doc.paths[template][method.toLowerCase()];
      if (operation === undefined) {
        expect(answer.status, `${where}: an undocumented method, so a 405`).to.equal(405);
        response = { content: { 'application/json': { schema: this.doc.components.schemas.Error } } };
      } else {
        response = operation.responses[String(answer.status)];
        expect(response, `${where}: status ${answer.status} is not documented for ${method} ${template}`).to.not.equal(undefined);
        if (answer.status < 300) this.succeeded.add(`${method} ${template}`);
      }
    }
    const content = response.content as Record<string, { schema: object }> | undefined;
    if (content === undefined) {
      expect(answer.text, `${where}: documented without a body`).to.equal('');
      return;
    }
    const type = String(answer.headers['content-type'] ?? '').split(';')[0]!.trim();
    expect(Object.keys(content), `${where}: content type`).to.include(type);
    if (type !== 'application/json') return;
    const validate = this.validator(content[type]!.schema);
    expect(validate(answer.json), `${where}: ${JSON.stringify(validate.errors)}`).to.equal(true);
  }
}

function send(base: string, method: string, path: string, options: CallOptions = {}): Promise<Answer> {
  const body = options.body === undefined ? undefined : typeof options.body === 'string' || Buffer.isBuffer(options.body) ? options.body : JSON.stringify(options.body);
  const headers: Record<string, string | number> = { ...(options.admin === true ? { Authorization: `Bearer ${ADMIN}` } : {}), ...options.headers };
  if (body !== undefined) headers['Content-Length'] = Buffer.byteLength(body);
  return new Promise((resolve, reject) => {
    const req = request(`${base}${path}`, { method, headers }, (res) => {
      if (options.headersOnly === true) {
        resolve({ status: res.statusCode!, headers: res.headers, text: '', json: undefined });
        res.destroy();
        return;
      }
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let json: Json;
        try {
          json = JSON.parse(text);
        } catch {
          json = undefined;
        }
        resolve({ status: res.statusCode!, headers: res.headers, text, json });
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe('the OpenAPI document (generated from src/http/routes/)', () => {
  it('is a valid OpenAPI 3.1 document for an independent validator (@seriousme/openapi-schema-validator)', async () => {
    const validator = new Validator();
    const result = await validator.validate(structuredClone(file));
    expect(result.errors ?? [], JSON.stringify(result.errors)).to.deep.equal([]);
    expect(result.valid).to.equal(true);
    expect(validator.version).to.equal('3.1');
  });

  it('holds JSON Schemas that compile in strict mode (Ajv, draft 2020-12), every $ref resolved', async () => {
    const validator = new Validator();
    await validator.validate(structuredClone(file));
    const check = new DocumentCheck(validator.resolveRefs());
    for (const [name, schema] of Object.entries(check.doc.components.schemas as Record<string, object>)) {
      expect(() => check.validator(schema), name).to.not.throw();
    }
  });

  it('is clean under Redocly\'s recommended rules: no error, no warning (@redocly/openapi-core)', async () => {
    const config = await createConfig({ extends: ['recommended'] });
    const problems = await lintFromString({ source: JSON.stringify(file), absoluteRef: 'openapi.json', config });
    expect(problems.map((p) => `${p.severity} ${p.ruleId}: ${p.message} at ${p.location[0]?.pointer ?? ''}`)).to.deep.equal([]);
  });

  it('has every declared route, each with an operationId of its own, and the ingestion paths with a CORS preflight and Basic auth or none', () => {
    expect(ROUTES.length).to.be.greaterThan(45);
    const ids = ROUTES.map((r) => r.operationId);
    expect(new Set(ids).size).to.equal(ids.length);
    for (const r of ROUTES) {
      expect(file.paths[r.path][r.method.toLowerCase()].operationId, `${r.method} ${r.path}`).to.equal(r.operationId);
      if (r.path.startsWith('/v1/') && r.method === 'POST') {
        expect(file.paths[r.path].options, r.path).to.be.an('object');
        expect(file.paths[r.path].post.security, r.path).to.deep.equal([{ writeKey: [] }, {}]);
      }
    }
  });

  it('takes the admin token on every /admin/ operation, and no token elsewhere', () => {
    expect(file.security).to.deep.equal([{ adminToken: [] }]);
    for (const [path, item] of Object.entries(file.paths as Record<string, Record<string, Json>>)) {
      for (const method of METHODS.map((m) => m.toLowerCase())) {
        const operation = item[method];
        if (operation === undefined) continue;
        if (path.startsWith('/admin/')) {
          expect(operation.security, `${method} ${path}`).to.equal(undefined);
          expect(Object.keys(operation.responses), `${method} ${path}`).to.include.members(['401', '403', '503']);
        } else {
          expect(operation.security, `${method} ${path}`).to.not.equal(undefined);
        }
      }
    }
  });
});

describe('the real answers of every route, against the OpenAPI document (integration, 127.0.0.1)', function () {
  this.timeout(30_000);
  const receiver = useReceiver();
  let forwarder: Forwarder;
  let bare: Forwarder;
  let url: string;
  let bareUrl: string;
  let dataDir: string;
  let check: DocumentCheck;

  before(async () => {
    const validator = new Validator();
    await validator.validate(structuredClone(file));
    check = new DocumentCheck(validator.resolveRefs());
    // 410 Gone fails a delivery at once and disables the URL; /ordered keeps a call retrying (a minute apart).
    receiver.failFirst('/gone', 1_000_000, 410);
    receiver.failFirst('/ordered', 1_000_000, 503);
    dataDir = mkdtempSync(join(tmpdir(), 'eventrelay-openapi-'));
    forwarder = createForwarder(
      {
        adminToken: ADMIN,
        delivery: { minRetryDelay: 60_000, maxRetryDelay: 60_000 },
        sources: [
          { name: 'web', writeKey: 'key-web', allowedOrigins: ['https://shop.example'], destinations: { Webhooks: { webhooks: [{ url: `${receiver.url}/web` }] } } },
          { name: 'gone', writeKey: 'key-gone', destinations: { Webhooks: { webhooks: [{ url: `${receiver.url}/gone` }] } } },
          { name: 'ordered', writeKey: 'key-ordered', destinations: { Webhooks: { ordering: 'user', webhooks: [{ url: `${receiver.url}/ordered` }] } } },
          { name: 'limited', writeKey: 'key-limited', ingestRateLimit: { perSecond: 0.01, burst: 1 } },
        ],
      },
      { dataDir },
    );
    ({ url } = await forwarder.listen({ port: 0, host: '127.0.0.1' }));
    bare = createForwarder({ storage: { type: 'memory' }, sources: [] });
    ({ url: bareUrl } = await bare.listen({ port: 0, host: '127.0.0.1' }));
  });

  after(async () => {
    await bare?.close();
    await forwarder?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  /** A request to the forwarder; its answer is checked against the document before it is returned. */
  async function call(method: string, path: string, options: CallOptions = {}, base = url): Promise<Answer> {
    const answer = await send(base, method, path, options);
    check.check(method, path, answer);
    return answer;
  }
  const admin = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => call(method, path, { admin: true, body, headers: { 'Content-Type': 'application/json', ...headers } });
  const ingest = (path: string, body: unknown, writeKey = 'key-web', headers: Record<string, string> = {}) =>
    call('POST', path, { body, headers: { 'Content-Type': 'application/json', Authorization: basic(writeKey), ...headers } });

  it('answers each documented method of each path, and 405 (with `Allow`) for any other', async () => {
    for (const [template, item] of Object.entries(check.doc.paths as Record<string, Record<string, Json>>)) {
      const documented = METHODS.filter((m) => item[m.toLowerCase()] !== undefined);
      for (const method of METHODS) {
        // Without credentials: the route and method are known before the token or key is checked.
        const answer = await call(method, concrete(template), method === 'GET' || method === 'OPTIONS' ? {} : { body: '{}', headers: { 'Content-Type': 'application/json' } });
        if (documented.includes(method)) {
          expect(answer.status, `${method} ${template}`).to.not.equal(405);
        } else {
          expect(answer.status, `${method} ${template}`).to.equal(405);
          const allowed = String(answer.headers.allow).split(/,\s*/).filter((m) => m !== 'HEAD' && m !== 'OPTIONS');
          expect(allowed, `Allow of ${template}`).to.deep.equal(documented.filter((m) => m !== 'OPTIONS'));
        }
      }
    }
  });

  it('ingestion: 200 with and without refused messages, on every path; 400, 401, 403, 413, 415, 429', async () => {
    const track = { type: 'track', userId: 'u1', event: 'Signed Up', properties: { plan: 'pro' } };
    expect((await ingest('/v1/batch', { batch: [track] })).json).to.deep.equal({ success: true });
    const partial = await ingest('/v1/batch', { batch: [track, { type: 'track', userId: 'u1' }] });
    expect(partial.json.rejected[0]).to.include({ index: 1, code: 'invalid_message', field: 'event' });
    expect((await ingest('/v1/import', { batch: [track] })).status).to.equal(200);
    expect((await ingest('/v1/b', { batch: [track] })).status).to.equal(200);
    const calls: Record<string, object> = {
      identify: { userId: 'u1', traits: { plan: 'pro' } },
      track: { userId: 'u1', event: 'Clicked' },
      page: { userId: 'u1', name: 'Home', properties: { path: '/' } },
      screen: { userId: 'u1', name: 'Home' },
      group: { userId: 'u1', groupId: 'g1', traits: {} },
      alias: { userId: 'u2', previousId: 'u1' },
    };
    for (const [type, body] of Object.entries(calls)) {
      expect((await ingest(`/v1/${type}`, body)).status, type).to.equal(200);
      expect((await ingest(`/v1/${type[0]}`, body)).status, type[0]).to.equal(200);
    }
    // The key in the body, as text/plain from a browser of an allowed origin.
    const beacon = await call('POST', '/v1/t', { body: { ...calls.track, writeKey: 'key-web' }, headers: { 'Content-Type': 'text/plain', Origin: 'https://shop.example' } });
    expect(beacon.status).to.equal(200);
    expect(beacon.headers['access-control-allow-origin']).to.equal('https://shop.example');

    expect((await ingest('/v1/batch', '{"batch": [')).json.error.code).to.equal('invalid_json');
    expect((await ingest('/v1/batch', { events: [] })).json.error.code).to.equal('invalid_body');
    expect((await ingest('/v1/batch', { batch: [track] }, 'wrong-key')).status).to.equal(401);
    expect((await call('POST', '/v1/batch', { body: { batch: [track] } })).status).to.equal(401);
    expect((await ingest('/v1/batch', { batch: [track] }, 'key-web', { Origin: 'https://evil.example' })).status).to.equal(403);
    const large = await ingest('/v1/batch', { batch: [{ ...track, properties: { text: 'x'.repeat(520_000) } }] });
    expect(large.status).to.equal(413);
    expect(large.json.error.limit).to.equal(512_000);
    expect((await ingest('/v1/batch', { batch: [track] }, 'key-web', { 'Content-Encoding': 'br' })).status).to.equal(415);
    expect((await ingest('/v1/batch', Buffer.from('not gzip'), 'key-web', { 'Content-Encoding': 'gzip' })).json.error.code).to.equal('invalid_body');
    expect((await ingest('/v1/batch', gzipSync(JSON.stringify({ batch: [track] })), 'key-web', { 'Content-Encoding': 'gzip' })).status).to.equal(200);
    expect((await ingest('/v1/batch', { batch: [track] }, 'key-limited')).status).to.equal(200);
    const limited = await ingest('/v1/batch', { batch: [track] }, 'key-limited');
    expect(limited.status).to.equal(429);
    expect(Number(limited.headers['retry-after'])).to.be.greaterThan(0);
  });

  it('ingestion: CORS preflights and the settings Segment\'s libraries load', async () => {
    const preflight = { Origin: 'https://shop.example', 'Access-Control-Request-Method': 'POST' };
    expect((await call('OPTIONS', '/v1/batch', { headers: preflight })).headers['access-control-allow-origin']).to.equal('https://shop.example');
    expect((await call('OPTIONS', '/v1/batch', { headers: { ...preflight, Origin: 'https://evil.example' } })).status).to.equal(403);
    expect((await call('OPTIONS', '/v1/t')).headers.allow).to.equal('POST, OPTIONS');
    expect((await call('OPTIONS', '/v1/projects/key-web/settings', { headers: { ...preflight, 'Access-Control-Request-Method': 'GET' } })).status).to.equal(204);

    const settings = await call('GET', '/v1/projects/key-web/settings');
    expect(settings.json.integrations['Segment.io']).to.include({ apiKey: 'key-web', protocol: 'http' });
    expect((await call('GET', '/v1/projects/key-unknown/settings')).status).to.equal(404);
    expect((await call('GET', '/v1/projects/key-web/settings', { headers: { Origin: 'https://evil.example' } })).status).to.equal(403);
    expect((await call('GET', '/v1/projects/key-web/settings', { headers: { Host: 'not a host' } })).json.error.code).to.equal('invalid_host');
  });

  it('operations: /health, /stats, /metrics, the debugger page, 404 for an unknown path, and this document with the server\'s version', async () => {
    expect((await call('GET', '/health')).json).to.deep.equal({ status: 'ok' });
    expect((await call('GET', '/stats')).json.accepted).to.be.a('number');
    expect((await call('GET', '/metrics')).text).to.include('eventrelay_');
    for (const path of ['/debugger', '/debugger/app.js', '/debugger/app.css']) {
      const page = await call('GET', path);
      expect((await call('GET', path, { headers: { 'If-None-Match': String(page.headers.etag) } })).status).to.equal(304);
    }
    expect((await call('GET', '/v2/batch')).json.error.code).to.equal('not_found');
    expect((await call('GET', '/admin/nothing-here', { admin: true })).status).to.equal(404);

    const served = await call('GET', '/openapi.json');
    expect(served.headers['content-type']).to.match(/^application\/json/);
    expect(served.json.info.version).to.equal(FORWARDER_VERSION);
    expect(served.json).to.deep.equal(file);
    expect((await call('GET', '/health?verbose=1')).json.error.field).to.equal('verbose');
    // HEAD is answered as GET wherever GET is declared: the same status, no body.
    for (const [path, admin] of [['/health', false], ['/admin/sources', true], ['/v1/projects/key-web/settings', false]] as const) {
      const head = await send(url, 'HEAD', path, { admin });
      expect([head.status, head.text], path).to.deep.equal([200, '']);
    }
  });

  it('admin: 401 without or with a wrong token, 403 when no token is configured', async () => {
    expect((await call('GET', '/admin/messages')).status).to.equal(401);
    expect((await call('GET', '/admin/messages', { headers: { Authorization: 'Bearer wrong' } })).status).to.equal(401);
    expect((await call('GET', '/admin/sources', { headers: { Authorization: 'Bearer wrong' } }, bareUrl)).json.error.code).to.equal('admin_disabled');
  });

  it('admin: the delivery log, a delivery (with `waitingBehind`), replay, recover, the live stream, the overview', async () => {
    await ingest('/v1/batch', { batch: [{ type: 'track', userId: 'u9', event: 'Gone', messageId: 'to-gone' }] }, 'key-gone');
    await ingest('/v1/batch', { batch: [
      { type: 'identify', userId: 'u7', traits: {}, messageId: 'ordered-first' },
      { type: 'track', userId: 'u7', event: 'After', messageId: 'ordered-second' },
    ] }, 'key-ordered');
    const lineOf = async (messageId: string) => (await admin('GET', `/admin/messages?messageId=${messageId}`)).json.items[0];
    await waitFor(async () => (await lineOf('to-gone'))?.status === 'failed', 'the 410 to fail the delivery');
    await waitFor(async () => (await lineOf('ordered-first'))?.status === 'retrying', 'the first ordered call to be retrying');

    const page = await admin('GET', '/admin/messages?limit=1');
    expect(page.json.items).to.have.length(1);
    expect(page.json.nextCursor).to.be.a('string');
    expect((await admin('GET', `/admin/messages?limit=1&cursor=${page.json.nextCursor}`)).json.items).to.have.length(1);
    expect((await admin('GET', '/admin/messages?status=lost')).json.error.field).to.equal('status');

    const second = await admin('GET', `/admin/deliveries/${(await lineOf('ordered-second')).id}`);
    expect(second.json.waitingBehind).to.deep.equal({ id: (await lineOf('ordered-first')).id, messageId: 'ordered-first' });
    const failed = await admin('GET', `/admin/deliveries/${(await lineOf('to-gone')).id}`);
    expect(failed.json.attemptLog[0]).to.include({ status: 410, outcome: 'failed' });
    expect((await admin('GET', '/admin/deliveries/abc')).status).to.equal(400);
    expect((await admin('GET', '/admin/deliveries/987654')).status).to.equal(404);

    // Its only URL answered 410 and is disabled: a replay would only wait (409 endpoint_disabled, naming it).
    await waitFor(async () => (await admin('GET', '/admin/sources/gone/destinations/Webhooks/endpoints')).json.endpoints[0].disabled === true, 'the 410 to disable the URL');
    const refused = await admin('POST', `/admin/deliveries/${failed.json.id}/replay`);
    expect(refused.status).to.equal(409);
    expect(refused.json.error).to.include({ code: 'endpoint_disabled' });
    expect(refused.json.error.urls).to.deep.equal([`${receiver.url}/gone`]);
    // Enabled, it is replayed (and its 410 disables the URL again, for the endpoints test).
    expect((await admin('POST', '/admin/sources/gone/destinations/Webhooks/endpoints/enable', { url: `${receiver.url}/gone` })).json).to.include({ wasDisabled: true });
    expect((await admin('POST', `/admin/deliveries/${failed.json.id}/replay`)).json).to.deep.equal({ id: failed.json.id, series: 2, state: 'pending' });
    expect((await admin('POST', `/admin/deliveries/${second.json.id}/replay`)).json.error.code).to.equal('not_replayable');
    expect((await admin('POST', '/admin/deliveries/987654/replay')).status).to.equal(404);

    expect((await admin('POST', '/admin/recover', { source: 'gone', since: 0 })).json).to.include({ source: 'gone', until: null });
    expect((await admin('POST', '/admin/recover', { source: 'nope', since: 0 })).json.error.field).to.equal('source');
    expect((await admin('POST', '/admin/recover', { source: 'limited', since: 0 })).status).to.equal(409);
    expect((await admin('POST', '/admin/recover', '[1, 2]')).json.error.code).to.equal('invalid_json');
    // Every problem of a body at once, the first named in `field`.
    const bad = await admin('POST', '/admin/recover', { source: 7, since: true, extra: 1 });
    expect(bad.json.error.problems.map((p: { field: string }) => p.field).sort()).to.deep.equal(['extra', 'since', 'source']);
    expect(bad.json.error.field).to.be.oneOf(['extra', 'since', 'source']);

    const stream = await call('GET', '/admin/stream?source=web', { admin: true, headersOnly: true });
    expect(stream.headers['content-type']).to.match(/^text\/event-stream/);
    expect((await admin('GET', '/admin/stream?source=nope')).status).to.equal(400);

    const overview = await admin('GET', '/admin/overview');
    expect(overview.json.sources).to.include('web');
  });

  it('admin: deletions and audience syncs', async () => {
    expect((await admin('POST', '/admin/deletions', { userId: 'u1' })).json.notified).to.include('web');
    expect((await admin('POST', '/admin/deletions', {})).json.error.field).to.equal('userId');
    expect((await admin('POST', '/admin/audiences/sync', { source: 'web', audience: 'High Value', members: ['u1'] })).json).to.include({ trait: 'high_value', firstSync: true });
    expect((await admin('POST', '/admin/audiences/sync', {})).status).to.equal(400);
  });

  it('admin: sources, write keys, settings, the Webhooks destination, its test, endpoints, secret rotation, apply', async () => {
    expect((await admin('GET', '/admin/sources')).json.sources.map((s: { name: string }) => s.name)).to.include('web');
    const created = await admin('POST', '/admin/sources', { name: 'made', allowedOrigins: ['https://made.example'] });
    expect(created.status).to.equal(201);
    expect((await admin('POST', '/admin/sources', { name: 'made' })).status).to.equal(409);
    expect((await admin('POST', '/admin/sources', {})).status).to.equal(400);
    expect((await admin('POST', '/admin/sources', { name: 'x'.repeat(70_000) })).status).to.equal(413);
    expect((await admin('GET', '/admin/sources/made')).json.writeKeys).to.have.length(1);
    expect((await admin('GET', '/admin/sources/nobody')).status).to.equal(404);

    expect((await admin('GET', '/admin/sources/made/write-keys')).json.keys).to.have.length(1);
    expect((await admin('POST', '/admin/sources/made/write-keys', { graceSeconds: 60 })).status).to.equal(201);
    expect((await admin('POST', '/admin/sources/made/write-keys')).status).to.equal(201);
    expect((await admin('POST', '/admin/sources/nobody/write-keys')).status).to.equal(404);

    expect((await admin('GET', '/admin/sources/made/settings')).json.allowedOrigins).to.deep.equal(['https://made.example']);
    expect((await admin('PUT', '/admin/sources/made/settings', { ingestRateLimit: { perSecond: 50, burst: 100 } })).json).to.deep.equal({ allowedOrigins: null, ingestRateLimit: { perSecond: 50, burst: 100 } });
    expect((await admin('PUT', '/admin/sources/made/settings', { allowedOrigins: 'x' })).status).to.equal(400);

    expect((await admin('PATCH', '/admin/sources/made/destinations/Webhooks', { enabled: true })).status).to.equal(404);
    const put = await admin('PUT', '/admin/sources/made/destinations/Webhooks', {
      sharedSecret: 'first-secret',
      signing: 'both',
      webhooks: [{ url: `${receiver.url}/made?token=t`, headers: { 'X-Team': 'a' }, rateLimit: { perSecond: 10 }, filter: { types: ['track'] } }],
    });
    expect(put.json).to.include({ enabled: true, hasSharedSecret: true });
    expect((await admin('PUT', '/admin/sources/made/destinations/Webhooks', { webhooks: [] })).status).to.equal(400);
    // The config file's rules, every problem at once.
    const several = await admin('PUT', '/admin/sources/made/destinations/Webhooks', { webhooks: [{ url: 'ftp://x' }], signing: 'nope', extra: 1 });
    expect(several.json.error.problems.map((p: { field: string }) => p.field).sort()).to.deep.equal(['extra', 'signing', 'webhooks[0].url']);
    expect((await admin('PATCH', '/admin/sources/made/destinations/Webhooks', { enabled: false })).json.enabled).to.equal(false);
    // A patch of part of a URL, and one that adds a URL: each body is one the document allows.
    const patchSchema = check.doc.paths['/admin/sources/{name}/destinations/Webhooks'].patch.requestBody.content['application/json'].schema;
    const patches = [
      { webhooks: [{ from: 0, headers: { 'X-Team': null, 'X-Other': 'b' }, rateLimit: null }], ordering: 'user' },
      { webhooks: [{ from: 0, url: `${receiver.url}/made?token=t` }, { url: `${receiver.url}/made-2`, filter: { types: ['identify'] } }], sharedSecret: 'first-secret' },
    ];
    for (const patch of patches) {
      const validate = check.validator(patchSchema);
      expect(validate(patch), JSON.stringify(validate.errors)).to.equal(true);
      expect((await admin('PATCH', '/admin/sources/made/destinations/Webhooks', patch)).status).to.equal(200);
    }
    expect(check.validator(patchSchema)({ webhooks: [{ from: 0, secret: 'x' }] })).to.equal(false);
    expect((await admin('PATCH', '/admin/sources/made/destinations/Webhooks', { webhooks: [{ from: 7 }] })).status).to.equal(400);
    const tested = await admin('POST', '/admin/sources/made/destinations/Webhooks/test', { type: 'identify' });
    expect(tested.json).to.include({ type: 'identify', delivered: true });
    expect((await admin('POST', '/admin/sources/made/destinations/Webhooks/test')).json.type).to.equal('track');
    expect((await admin('POST', '/admin/sources/made/destinations/Webhooks/test', { type: 'nope' })).status).to.equal(400);
    expect((await admin('POST', '/admin/sources/limited/destinations/Webhooks/test')).status).to.equal(404);

    await waitFor(async () => (await admin('GET', '/admin/sources/gone/destinations/Webhooks/endpoints')).json.endpoints[0].disabled === true, 'the 410 to disable the URL');
    const enabled = await admin('POST', '/admin/sources/gone/destinations/Webhooks/endpoints/enable', { url: `${receiver.url}/gone` });
    expect(enabled.json).to.include({ source: 'gone', wasDisabled: true });
    expect((await admin('POST', '/admin/sources/gone/destinations/Webhooks/endpoints/enable', { url: 'https://other.example/' })).status).to.equal(404);
    expect((await admin('GET', '/admin/sources/limited/destinations/Webhooks/endpoints')).status).to.equal(404);

    const rotated = await admin('POST', '/admin/sources/made/destinations/Webhooks/secret', { sharedSecret: 'second-secret', graceSeconds: 60 });
    expect(rotated.json).to.include({ source: 'made', signing: 'both' });
    expect(rotated.json.previousSecretsValidUntil).to.be.a('string');
    expect((await admin('POST', '/admin/sources/limited/destinations/Webhooks/secret', { sharedSecret: 's' })).status).to.equal(404);
    expect((await admin('POST', '/admin/sources/made/destinations/Webhooks/secret', 'not json')).json.error.code).to.equal('invalid_json');

    const plan = await admin('POST', '/admin/apply', { sources: [{ name: 'applied', writeKey: 'key-applied' }], dryRun: true });
    expect(plan.json).to.include({ dryRun: true, applied: false });
    expect(plan.json.lines).to.deep.include({ source: 'applied', action: 'create', changes: plan.json.lines.find((l: { source: string }) => l.source === 'applied').changes });
    expect((await admin('POST', '/admin/apply', {})).json.error.field).to.equal('sources');
    const twoBad = await admin('POST', '/admin/apply', { sources: [{ name: 'a', writeKey: 'k' }, { name: 'a', writeKey: 'k' }] });
    expect(twoBad.json.error.problems.map((p: { field: string }) => p.field)).to.deep.equal(['sources[1].name', 'sources[1].writeKey']);

    expect((await admin('DELETE', '/admin/sources/made')).json).to.include({ name: 'made' });
    expect((await admin('DELETE', '/admin/sources/made')).status).to.equal(404);
  });

  it('admin: a source\'s schema and usage', async () => {
    await ingest('/v1/track', { userId: 'u1', event: 'Counted' });
    const schema = await admin('GET', '/admin/sources/web/schema');
    expect(schema.json.events.some((e: { event?: string }) => e.event === 'Counted')).to.equal(true);
    expect((await admin('PUT', '/admin/sources/web/schema', { blockedEvents: ['Spam'] })).json).to.deep.equal({ blockedEvents: ['Spam'], allowedEvents: null, blockedTypes: [] });
    expect((await admin('PUT', '/admin/sources/web/schema', { blockedTypes: ['nope'] })).status).to.equal(400);
    expect((await admin('GET', '/admin/sources/nobody/schema')).status).to.equal(404);
    const usage = await admin('GET', '/admin/usage?source=web');
    expect(usage.json.sources[0].received).to.be.greaterThan(0);
    expect((await admin('GET', '/admin/usage?since=yesterday')).json.error.field).to.equal('since');
  });

  it('admin: a transform tried on a message (200, 422, 400 with line and column)', async () => {
    const message = { type: 'track', event: 'Tried', userId: 'u1' };
    expect((await admin('POST', '/admin/transform/test', { code: 'function transform(m) { return { e: m.event }; }', message })).json).to.deep.include({ output: { e: 'Tried' } });
    expect((await admin('POST', '/admin/transform/test', { code: 'function transform() { throw new Error("no"); }', message })).status).to.equal(422);
    const broken = await admin('POST', '/admin/transform/test', { code: 'function transform( {', message });
    expect(broken.json.error).to.include({ field: 'code', line: 1 });
    expect((await admin('POST', '/admin/transform/test', { code: 'function transform(m) { return m; }', message, extra: 1 })).status).to.equal(400);
  });

  it('got a 2xx answer from every documented operation', () => {
    const operations = Object.entries(check.doc.paths as Record<string, Record<string, Json>>).flatMap(([template, item]) =>
      METHODS.filter((m) => item[m.toLowerCase()] !== undefined).map((m) => `${m} ${template}`),
    );
    expect(operations.filter((o) => !check.succeeded.has(o))).to.deep.equal([]);
  });
});
