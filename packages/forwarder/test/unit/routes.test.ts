import { describe, it } from 'mocha';
import { expect } from 'chai';
import { Type } from '@sinclair/typebox';
import { ROUTE_CHECKS, ROUTES, ROUTE_TABLE } from '../../src/http/routes';
import { route, RouteTable } from '../../src/http/routes/define';
import { compileChecks } from '../../src/http/routes/validate';

/** The route declarations (src/http/routes/): the table dispatch reads, and the checks compiled from their schemas. */
describe('the route declarations', () => {
  const checkOf = (operationId: string) => ROUTE_CHECKS.get(ROUTES.find((r) => r.operationId === operationId)!)!;

  it('finds a route by literal path or by template, with its raw parameters; HEAD finds GET', () => {
    const batch = ROUTE_TABLE.lookup('POST', '/v1/batch');
    expect(batch && 'found' in batch ? batch.found.route.operationId : undefined).to.equal('batch');
    const source = ROUTE_TABLE.lookup('HEAD', '/admin/sources/my%20source');
    expect(source && 'found' in source ? [source.found.route.operationId, source.found.params] : undefined).to.deep.equal(['getSource', { name: 'my%20source' }]);
    expect(ROUTE_TABLE.lookup('GET', '/admin/sources//write-keys')).to.equal(undefined);
    expect(ROUTE_TABLE.lookup('GET', '/nowhere')).to.equal(undefined);
  });

  it('says which methods a path takes when the request\'s is not one (HEAD beside GET)', () => {
    expect(ROUTE_TABLE.lookup('PUT', '/admin/sources/web')).to.deep.equal({ allow: ['GET', 'DELETE', 'HEAD'] });
    expect(ROUTE_TABLE.lookup('GET', '/v1/track')).to.deep.equal({ allow: ['POST'] });
  });

  it('refuses a route declared twice', () => {
    const r = route({ method: 'GET', path: '/x', auth: 'none', operationId: 'x', tags: ['t'], summary: 'x', responses: { 200: { description: 'ok' } } });
    expect(() => new RouteTable([r, { ...r, operationId: 'y' }])).to.throw(/declared twice: GET \/x/);
  });

  it('checks a body against its route\'s schema and names every problem at once, each with its field, what was expected and what came', () => {
    expect(checkOf('recover').body!({ source: 'web', since: 0 })).to.deep.equal([]);
    expect(checkOf('recover').body!({ source: 1, extra: 2 })).to.deep.equal([
      { field: 'since', message: 'Expected `since` to be a string or a number, got nothing' },
      { field: 'extra', message: 'Unknown field `extra`; expected `source`, `since`, `until`' },
      { field: 'source', message: 'Expected `source` to be a non-empty string, got `1` (number)' },
    ]);
    expect(checkOf('rotateSecret').body!({ sharedSecret: 'x', graceSeconds: 31 * 86_400 })).to.deep.equal([
      { field: 'graceSeconds', message: 'Expected `graceSeconds` to be an integer from 0 to 2592000, got `2678400` (number)' },
    ]);
  });

  it('names a nested field by its path, and never shows the value of a field that may be a secret', () => {
    const [checks] = [...compileChecks([
      route({
        method: 'POST',
        path: '/t',
        auth: 'none',
        operationId: 't',
        tags: ['t'],
        summary: 't',
        body: { required: true, schema: Type.Object({ items: Type.Array(Type.Object({ apiKey: Type.Integer(), url: Type.String() })) }) },
        responses: { 200: { description: 'ok' } },
      }),
    ]).values()];
    const problems = checks!.body!({ items: [{ apiKey: 'sk_live_hidden', url: 'https://x' }, { apiKey: 1 }] });
    expect(problems.map((p) => p.field)).to.deep.equal(['items[0].apiKey', 'items[1].url']);
    expect(problems[0]!.message).to.equal('Expected `items[0].apiKey` to be an integer, got a string');
    expect(JSON.stringify(problems)).to.not.contain('hidden');
  });

  it('checks a query with its values turned into the declared types, and refuses an unknown parameter', () => {
    expect(checkOf('usage').query!({ source: 'web', since: '2026-01-01' })).to.deep.equal([]);
    expect(checkOf('usage').query!({ day: '1' })).to.deep.equal([{ field: 'day', message: 'Unknown parameter `day`; expected `source`, `since`, `until`' }]);
    expect(checkOf('health').query!({})).to.deep.equal([]);
  });

  it('checks every route\'s path parameters by their declared schema, naming the parameter', () => {
    for (const r of ROUTES.filter((x) => x.params !== undefined)) expect(ROUTE_CHECKS.get(r)?.params, r.operationId).to.be.a('function');
    expect(checkOf('getDelivery').params!({ id: '42' })).to.deep.equal([]);
    expect(checkOf('replayDelivery').params!({ id: '4.2' })).to.deep.equal([{ field: 'id', message: 'Expected `id` to be a delivery id (a positive integer), got `"4.2"` (string)' }]);
  });

  it('checks by their schemas the bodies whose whole shape the schema says (a rotation, a test event, a deletion)', () => {
    for (const id of ['rotateWriteKey', 'testWebhooks', 'requestDeletion', 'createSource', 'putSourceSettings']) expect(checkOf(id).body, id).to.be.a('function');
    expect(checkOf('rotateWriteKey').body!({ graceSeconds: 30 * 86_400 + 1 }).map((p) => p.field)).to.deep.equal(['graceSeconds']);
  });

  it('leaves to their own rules the bodies other readers share (ingestion, the config file\'s)', () => {
    expect(checkOf('batch').body).to.equal(undefined);
    expect(checkOf('putWebhooks').body).to.equal(undefined);
  });
});
