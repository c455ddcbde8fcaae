import { Type } from '@sinclair/typebox';
import type { Static } from '@sinclair/typebox';
import { route } from './define';
import { EXPECTED } from '../../validation/check';
import { BodyTooLarge, Conflict, InvalidRequest, NotFound } from './answers';
import { AudienceSyncRequest, AudienceSyncResult, DeletionRequest, DeletionResult, DeliveryDetail, DeliveryState, MessagePage, RecoverRequest, Recovered, Replayed } from './shapes';

/** A delivery id as a path or a query holds it: a positive integer of at most 15 digits (a safe integer). */
export const DELIVERY_ID_PATTERN = '^\\d{1,15}$';

/** The `{id}` of a delivery's path, checked by the route's schema: a malformed one is a 400 naming `id`. */
const DeliveryId = Type.String({ description: 'The delivery id (`id` of a log row).', pattern: DELIVERY_ID_PATTERN, [EXPECTED]: 'a delivery id (a positive integer)' });

/** Why a replay was refused: `not_replayable` (says why) or `endpoint_disabled` (every URL it would go to is disabled, listed in `urls`). */
const ReplayRefused = {
  description: '`not_replayable` (says why) or `endpoint_disabled` (the URLs it would go to are disabled; enable one first).',
  schema: Type.Object(
    {
      success: Type.Literal(false),
      error: Type.Object(
        {
          code: Type.String({ description: '`not_replayable` or `endpoint_disabled`.' }),
          message: Type.String(),
          field: Type.Optional(Type.String()),
          urls: Type.Optional(Type.Array(Type.String(), { description: 'With `endpoint_disabled`: the disabled URLs, without credentials or query.' })),
        },
        { additionalProperties: true, description: 'More fields may say more (`urls`: the disabled URLs).' },
      ),
    },
    { additionalProperties: false },
  ),
};

export const DELIVERY_LOG_ROUTES = [
  route({
    method: 'GET',
    path: '/admin/messages',
    auth: 'admin',
    operationId: 'listMessages',
    tags: ['delivery log'],
    summary: 'List the delivery log',
    description: 'Newest first. An unknown filter or a bad value is a 400 that names it (`field`).',
    query: Type.Object({ source: Type.Optional(Type.String({ description: "A source's name." })), status: Type.Optional(Type.Unsafe<Static<typeof DeliveryState>>({ ...DeliveryState, ...{ description: 'A delivery state.' } })), type: Type.Optional(Type.String({ description: 'Call type (`track`, ...), or `delete`.' })), messageId: Type.Optional(Type.String({ description: 'A message id.' })), userId: Type.Optional(Type.String({ description: 'A user id.' })), event: Type.Optional(Type.String({ description: "A track call's event name (exact match)." })), since: Type.Optional(Type.String({ description: 'Received at or after.' })), until: Type.Optional(Type.String({ description: 'Received before.' })), limit: Type.Optional(Type.Integer({ description: 'Rows per page, 1 to 500 (default 50).', minimum: 1, maximum: 500, default: 50 })), cursor: Type.Optional(Type.String({ description: '`nextCursor` of the previous page.', pattern: DELIVERY_ID_PATTERN })) }),
    // Checked by parseMessageQuery (admin/api.ts), which turns it into the store's query.
    queryCheckedBy: 'handler',
    responses: { 200: { description: 'A page of the log.', schema: MessagePage }, 400: InvalidRequest },
  }),
  route({
    method: 'GET',
    path: '/admin/deliveries/{id}',
    auth: 'admin',
    operationId: 'getDelivery',
    tags: ['delivery log'],
    summary: 'One delivery, with its attempts',
    description: 'The row, its webhook body while kept, every attempt, and with `ordering: "user"` the call it waits behind. 404 once pruned.',
    params: Type.Object({ id: DeliveryId }),
    responses: { 200: { description: 'The delivery.', schema: DeliveryDetail }, 400: InvalidRequest, 404: NotFound },
  }),
  route({
    method: 'POST',
    path: '/admin/deliveries/{id}/replay',
    auth: 'admin',
    operationId: 'replayDelivery',
    tags: ['delivery log'],
    summary: 'Replay a delivery',
    description: 'Queued again: a new attempt series with a new retry window, the same bytes and `messageId`. Only a `failed` delivery, or a `delivered` one while its body is kept; anything else is a 409 `not_replayable`.',
    params: Type.Object({ id: DeliveryId }),
    responses: { 202: { description: 'Queued again.', schema: Replayed }, 400: InvalidRequest, 404: NotFound, 409: ReplayRefused },
  }),
  route({
    method: 'POST',
    path: '/admin/recover',
    auth: 'admin',
    operationId: 'recover',
    tags: ['delivery log'],
    summary: "Queue a source's failed deliveries again",
    description: 'Every failed delivery of the source received in the window, queued again. Running it twice queues nothing the second time. 409 when the source has no Webhooks destination switched on.',
    body: { schema: RecoverRequest, required: true, limit: 64 * 1024 },
    responses: { 202: { description: 'Queued again.', schema: Recovered }, 400: InvalidRequest, 409: Conflict, 413: BodyTooLarge },
  }),
  route({
    method: 'GET',
    path: '/admin/stream',
    auth: 'admin',
    operationId: 'stream',
    tags: ['delivery log'],
    summary: 'Live events (Server-Sent Events)',
    description: '`accepted`, `refused`, `attempt` and `replayed` events as they happen, of every instance on the store; all sources without `source`.',
    query: Type.Object({ source: Type.Optional(Type.String({ description: "Only this source's events." })) }),
    responses: { 200: { description: 'An open stream of Server-Sent Events; each `data:` line is JSON.', schema: Type.String(), contentType: 'text/event-stream' }, 400: InvalidRequest },
  }),
] as const;

export const DELETIONS_ROUTES = [
  route({
    method: 'POST',
    path: '/admin/deletions',
    auth: 'admin',
    operationId: 'requestDeletion',
    tags: ['deletions and audiences'],
    summary: "Delete a user's data (spec 2.3)",
    description: 'A `delete` notice to each affected source whose Webhooks destination is on.',
    // The schema checks the body's shape; an unknown source in `sources` needs the sources, and is the handler's (`field` "sources").
    body: { schema: DeletionRequest, required: true, limit: 16 * 1024 * 1024 },
    responses: { 202: { description: 'Queued.', schema: DeletionResult }, 400: InvalidRequest, 413: BodyTooLarge },
  }),
  route({
    method: 'POST',
    path: '/admin/audiences/sync',
    auth: 'admin',
    operationId: 'syncAudience',
    tags: ['deletions and audiences'],
    summary: "Replace an audience's membership (spec 6)",
    description: 'An identify per member added or removed, with the trait named by the snake_case of the audience name; the first sync sends every member.',
    body: { schema: AudienceSyncRequest, required: true, checkedBy: 'handler', limit: 16 * 1024 * 1024 },
    responses: { 200: { description: 'Synced.', schema: AudienceSyncResult }, 400: InvalidRequest, 413: BodyTooLarge },
  }),
] as const;
