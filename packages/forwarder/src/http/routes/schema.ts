import { Type } from '@sinclair/typebox';
import { route } from './define';
import { BodyTooLarge, InvalidRequest, NotFound } from './answers';
import { ShownSchema, SourceSchema, SourceSchemaInput, UsageReport } from './shapes';

export const SCHEMA_ROUTES = [
  route({
    method: 'GET',
    path: '/admin/sources/{name}/schema',
    auth: 'admin',
    operationId: 'getSourceSchema',
    tags: ['schema and usage'],
    summary: "The source's schema controls and what it sent",
    description: 'Every call type and track event name the source sent, most sent first.',
    params: Type.Object({ name: Type.String({ description: "The source's name (percent-encoded).", minLength: 1 }) }),
    responses: { 200: { description: 'The schema.', schema: ShownSchema }, 400: InvalidRequest, 404: NotFound },
  }),
  route({
    method: 'PUT',
    path: '/admin/sources/{name}/schema',
    auth: 'admin',
    operationId: 'putSourceSchema',
    tags: ['schema and usage'],
    summary: "Replace the source's schema controls",
    description: 'A list left out is empty; `allowedEvents` left out or null: no tracking plan.',
    params: Type.Object({ name: Type.String({ description: "The source's name (percent-encoded).", minLength: 1 }) }),
    body: { schema: SourceSchemaInput, required: true, checkedBy: 'handler', limit: 4 * 1024 * 1024 },
    responses: { 200: { description: 'The controls now.', schema: SourceSchema }, 400: InvalidRequest, 404: NotFound, 413: BodyTooLarge },
  }),
  route({
    method: 'GET',
    path: '/admin/usage',
    auth: 'admin',
    operationId: 'usage',
    tags: ['schema and usage'],
    summary: "Each source's usage per day",
    description: 'Counts over the UTC days `since` to `until` (both included; default the last 30 days).',
    query: Type.Object({ source: Type.Optional(Type.String({ description: 'One source (default every source).' })), since: Type.Optional(Type.String({ description: "First day: this instant's UTC date." })), until: Type.Optional(Type.String({ description: 'Last day (default now).' })) }, { additionalProperties: false }),
    responses: { 200: { description: 'The usage.', schema: UsageReport }, 400: InvalidRequest },
  }),
] as const;
