import { Type } from '@sinclair/typebox';
import { route } from './define';
import { BodyTooLarge, Conflict, InvalidRequest, NotFound } from './answers';
import { EnabledEndpoint, EndpointState } from './shapes';

export const ENDPOINTS_ROUTES = [
  route({
    method: 'GET',
    path: '/admin/sources/{name}/destinations/Webhooks/endpoints',
    auth: 'admin',
    operationId: 'listEndpoints',
    tags: ['endpoints'],
    summary: "Each URL's state",
    description: 'Whether it is disabled, and its failures.',
    params: Type.Object({ name: Type.String({ description: "The source's name (percent-encoded).", minLength: 1 }) }),
    responses: { 200: { description: 'The URLs, in order.', schema: Type.Object({ endpoints: Type.Array(EndpointState) }, { additionalProperties: false }) }, 400: InvalidRequest, 404: NotFound },
  }),
  route({
    method: 'POST',
    path: '/admin/sources/{name}/destinations/Webhooks/endpoints/enable',
    auth: 'admin',
    operationId: 'enableEndpoint',
    tags: ['endpoints'],
    summary: 'Enable a disabled URL',
    description: 'Named by its full URL or as the API shows it (when that names one URL only; else 409).',
    params: Type.Object({ name: Type.String({ description: "The source's name (percent-encoded).", minLength: 1 }) }),
    body: { schema: Type.Object({ url: Type.String({ minLength: 1 }) }, { additionalProperties: false }), required: true, limit: 64 * 1024 },
    responses: { 200: { description: 'Enabled (or was not disabled).', schema: EnabledEndpoint }, 400: InvalidRequest, 404: NotFound, 409: Conflict, 413: BodyTooLarge },
  }),
] as const;
