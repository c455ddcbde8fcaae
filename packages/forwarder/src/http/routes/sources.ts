import { Type } from '@sinclair/typebox';
import { Enum, OneOf, route } from './define';
import { BodyTooLarge, Conflict, InvalidRequest, NotFound } from './answers';
import { ApplyRequest, ApplyResult, CreateSourceRequest, CreatedSource, DeletedSource, IssuedWriteKey, RotateWriteKeyRequest, RotatedSecret, Source, SourceSettings, SourceSettingsInput, TestResult, WebhookBatchInput, WebhookFilter, WebhooksDestination, WebhooksDestinationInput, WebhookTransformInput, WriteKey } from './shapes';

/**
 * Largest body of a setup request, in bytes: a destination with 5 URLs and their headers fits many
 * times. The bodies the config file's rules check (`checkedBy: 'handler'`) are read by them, every
 * problem with its field.
 */
export const SETUP_BODY_LIMIT = 64 * 1024;

export const SOURCES_ROUTES = [
  route({
    method: 'GET',
    path: '/admin/sources',
    auth: 'admin',
    operationId: 'listSources',
    tags: ['sources'],
    summary: 'List sources',
    description: 'Never cached (`Cache-Control: no-store`).',
    responses: { 200: { description: 'Every source.', schema: Type.Object({ sources: Type.Array(Source) }, { additionalProperties: false }) }, 400: InvalidRequest },
  }),
  route({
    method: 'POST',
    path: '/admin/sources',
    auth: 'admin',
    operationId: 'createSource',
    tags: ['sources'],
    summary: 'Create a source',
    description: 'A new source without a destination, and a generated write key, shown this once.',
    body: { schema: CreateSourceRequest, required: true, limit: SETUP_BODY_LIMIT },
    responses: { 201: { description: 'Created.', schema: CreatedSource }, 400: InvalidRequest, 409: Conflict, 413: BodyTooLarge },
  }),
  route({
    method: 'POST',
    path: '/admin/apply',
    auth: 'admin',
    operationId: 'applySources',
    tags: ['sources'],
    summary: "Apply a config file's sources",
    description: "What `eventrelay apply --url` sends: the file's sources (secrets read), reconciled with the store; `dryRun` only plans.",
    body: { schema: ApplyRequest, required: true, checkedBy: 'handler', limit: 1024 * 1024 },
    responses: { 200: { description: 'The plan, applied unless a dry run.', schema: ApplyResult }, 400: InvalidRequest, 413: BodyTooLarge },
  }),
  route({
    method: 'GET',
    path: '/admin/sources/{name}',
    auth: 'admin',
    operationId: 'getSource',
    tags: ['sources'],
    summary: 'One source',
    description: 'Never cached (`Cache-Control: no-store`).',
    params: Type.Object({ name: Type.String({ description: "The source's name (percent-encoded).", minLength: 1 }) }),
    responses: { 200: { description: 'The source.', schema: Source }, 400: InvalidRequest, 404: NotFound },
  }),
  route({
    method: 'DELETE',
    path: '/admin/sources/{name}',
    auth: 'admin',
    operationId: 'deleteSource',
    tags: ['sources'],
    summary: 'Delete a source',
    description: "The source, its keys and audiences go; its pending deliveries fail with the deletion's reason.",
    params: Type.Object({ name: Type.String({ description: "The source's name (percent-encoded).", minLength: 1 }) }),
    responses: { 200: { description: 'Deleted.', schema: DeletedSource }, 400: InvalidRequest, 404: NotFound },
  }),
  route({
    method: 'GET',
    path: '/admin/sources/{name}/write-keys',
    auth: 'admin',
    operationId: 'listWriteKeys',
    tags: ['sources'],
    summary: "The source's valid write keys",
    description: 'Never a key: its id and last four characters.',
    params: Type.Object({ name: Type.String({ description: "The source's name (percent-encoded).", minLength: 1 }) }),
    responses: { 200: { description: 'The keys.', schema: Type.Object({ keys: Type.Array(WriteKey) }, { additionalProperties: false }) }, 400: InvalidRequest, 404: NotFound },
  }),
  route({
    method: 'POST',
    path: '/admin/sources/{name}/write-keys',
    auth: 'admin',
    operationId: 'rotateWriteKey',
    tags: ['sources'],
    summary: 'Issue a new write key',
    description: "The source's other keys stop working after `graceSeconds` (default 86400). An empty body is `{}`.",
    params: Type.Object({ name: Type.String({ description: "The source's name (percent-encoded).", minLength: 1 }) }),
    body: { schema: RotateWriteKeyRequest, required: false, limit: SETUP_BODY_LIMIT },
    responses: { 201: { description: 'The new key, shown this once.', schema: IssuedWriteKey }, 400: InvalidRequest, 404: NotFound, 413: BodyTooLarge },
  }),
  route({
    method: 'GET',
    path: '/admin/sources/{name}/settings',
    auth: 'admin',
    operationId: 'getSourceSettings',
    tags: ['sources'],
    summary: "The source's browser settings",
    description: 'Never cached (`Cache-Control: no-store`).',
    params: Type.Object({ name: Type.String({ description: "The source's name (percent-encoded).", minLength: 1 }) }),
    responses: { 200: { description: 'The settings.', schema: SourceSettings }, 400: InvalidRequest, 404: NotFound },
  }),
  route({
    method: 'PUT',
    path: '/admin/sources/{name}/settings',
    auth: 'admin',
    operationId: 'putSourceSettings',
    tags: ['sources'],
    summary: "Replace the source's browser settings",
    description: 'A field left out (or null) is not set afterwards.',
    params: Type.Object({ name: Type.String({ description: "The source's name (percent-encoded).", minLength: 1 }) }),
    body: { schema: SourceSettingsInput, required: true, limit: SETUP_BODY_LIMIT },
    responses: { 200: { description: 'The settings now.', schema: SourceSettings }, 400: InvalidRequest, 404: NotFound, 413: BodyTooLarge },
  }),
  route({
    method: 'PUT',
    path: '/admin/sources/{name}/destinations/Webhooks',
    auth: 'admin',
    operationId: 'putWebhooks',
    tags: ['sources'],
    summary: "Set the source's Webhooks destination",
    description: "The whole destination, checked like the config file's.",
    params: Type.Object({ name: Type.String({ description: "The source's name (percent-encoded).", minLength: 1 }) }),
    body: { schema: WebhooksDestinationInput, required: true, checkedBy: 'handler', limit: SETUP_BODY_LIMIT },
    responses: { 200: { description: 'The destination as shown (no secret, header names only).', schema: WebhooksDestination }, 400: InvalidRequest, 404: NotFound, 413: BodyTooLarge },
  }),
  route({
    method: 'PATCH',
    path: '/admin/sources/{name}/destinations/Webhooks',
    auth: 'admin',
    operationId: 'patchWebhooks',
    tags: ['sources'],
    summary: 'Change part of the destination',
    description: 'Only the fields given change; the others stay as they are (404 when the source has none). `sharedSecret: null` removes the secret; left out, the secret and the secrets a rotation still signs with stay. In `webhooks`, an entry with `from: i` is the URL now at index `i` (as `GET` lists them), with only what the entry gives changed: `url` replaces its address; `headers` sets each header named with a string and removes each named with null; `rateLimit`, `filter`, `transform` and `batch` replace, or remove with null. An entry without `from` is a new URL, as in `PUT`; a URL the list leaves out is removed. The result is checked as `PUT` checks it.',
    params: Type.Object({ name: Type.String({ description: "The source's name (percent-encoded).", minLength: 1 }) }),
    // Checked by the handler: an entry of `webhooks` is one of two objects (a URL set now, with `from`, or a new one), and
    // the schema could only say "`webhooks[0]` is neither", where the handler names the field at fault (`webhooks[0].colour`).
    body: { schema: Type.Object({ enabled: Type.Optional(Type.Boolean()), webhooks: Type.Optional(Type.Array(Type.Union([Type.Object({ from: Type.Integer({ description: 'Index of a URL set now.', minimum: 0 }), url: Type.Optional(Type.String()), headers: Type.Optional(Type.Object({ }, { ...{}, additionalProperties: Type.Union([Type.String(), Type.Null()]) })), rateLimit: Type.Optional(OneOf([Type.Null(), Type.Object({ perSecond: Type.Number() }, { additionalProperties: false })])), filter: Type.Optional(OneOf([Type.Null(), WebhookFilter])), transform: Type.Optional(OneOf([Type.Null(), WebhookTransformInput])), batch: Type.Optional(OneOf([Type.Null(), WebhookBatchInput])) }, { additionalProperties: false }), Type.Object({ url: Type.String(), headers: Type.Optional(Type.Object({ }, { ...{}, additionalProperties: Type.String() })), rateLimit: Type.Optional(Type.Object({ perSecond: Type.Number() }, { additionalProperties: false })), filter: Type.Optional(WebhookFilter), transform: Type.Optional(WebhookTransformInput), batch: Type.Optional(WebhookBatchInput) })]), { minItems: 1, maxItems: 5 })), sharedSecret: Type.Optional(OneOf([Type.Null(), Type.String(), Type.Array(Type.String())])), signing: Type.Optional(Enum(['x-signature', 'standard-webhooks', 'both'])), ordering: Type.Optional(Enum(['none', 'user'])) }, { additionalProperties: false }), required: true, checkedBy: 'handler', limit: SETUP_BODY_LIMIT },
    responses: { 200: { description: 'The destination as shown.', schema: WebhooksDestination }, 400: InvalidRequest, 404: NotFound, 413: BodyTooLarge },
  }),
  route({
    method: 'POST',
    path: '/admin/sources/{name}/destinations/Webhooks/test',
    auth: 'admin',
    operationId: 'testWebhooks',
    tags: ['sources'],
    summary: 'Send a test event to every URL',
    description: 'One signed sample to every URL, on or off; nothing is queued. An empty body sends a track.',
    params: Type.Object({ name: Type.String({ description: "The source's name (percent-encoded).", minLength: 1 }) }),
    body: { schema: Type.Object({ type: Type.Optional(Enum(['track', 'identify', 'page', 'screen', 'group', 'alias', 'delete'], { default: 'track' })) }, { additionalProperties: false }), required: false, limit: SETUP_BODY_LIMIT },
    responses: { 200: { description: 'What each URL answered.', schema: TestResult }, 400: InvalidRequest, 404: NotFound, 409: Conflict, 413: BodyTooLarge },
  }),
  route({
    method: 'POST',
    path: '/admin/sources/{name}/destinations/Webhooks/secret',
    auth: 'admin',
    operationId: 'rotateSecret',
    tags: ['sources'],
    summary: 'Rotate the shared secret',
    description: 'The new secret signs from now on; the one it replaces keeps signing Standard Webhooks requests beside it for `graceSeconds` (default 86400).',
    params: Type.Object({ name: Type.String({ description: "The source's name (percent-encoded).", minLength: 1 }) }),
    body: { schema: Type.Object({ sharedSecret: Type.String({ minLength: 1 }), graceSeconds: Type.Optional(Type.Integer({ minimum: 0, maximum: 30 * 86_400, description: 'How long the replaced secret keeps signing (default 86400).' })) }, { additionalProperties: false }), required: true, limit: SETUP_BODY_LIMIT },
    responses: { 200: { description: 'Rotated (never a secret in the answer).', schema: RotatedSecret }, 400: InvalidRequest, 404: NotFound, 413: BodyTooLarge },
  }),
] as const;

/** A refusal of the test route that may say where in the code: `line` and `column` (1-based) when the code does not compile. */
const TransformRefusal = (description: string, code: string) => ({
  description,
  schema: Type.Object(
    {
      success: Type.Literal(false),
      error: Type.Object(
        {
          code: Type.String({ description: code }),
          message: Type.String({ description: 'What went wrong; never a part of the message.' }),
          field: Type.Optional(Type.String({ description: 'The field at fault: `code` when it does not compile.' })),
          line: Type.Optional(Type.Integer({ minimum: 1, description: 'Where in the code, when known.' })),
          column: Type.Optional(Type.Integer({ minimum: 1 })),
          problems: Type.Optional(Type.Array(Type.Object({ field: Type.String(), message: Type.String() }, { additionalProperties: false }))),
          durationMs: Type.Optional(Type.Number({ minimum: 0, description: 'With `transform_failed`: how long the call ran.' })),
        },
        { additionalProperties: false },
      ),
    },
    { additionalProperties: false },
  ),
});

export const TRANSFORM_ROUTES = [
  route({
    method: 'POST',
    path: '/admin/transform/test',
    auth: 'admin',
    operationId: 'testTransform',
    tags: ['sources'],
    summary: 'Run a transform on a message',
    description:
      'Compiles `code` in a sandbox of its own, runs `transform(message)` once and answers what a URL with that transform would get (`output`: null when it skips the call). Nothing is stored or sent.',
    body: {
      schema: Type.Object(
        {
          code: WebhookTransformInput.properties.code,
          message: Type.Object({}, { description: 'The webhook message to run it on (as a URL would get it).' }),
          timeoutMs: WebhookTransformInput.properties.timeoutMs,
        },
        { additionalProperties: false },
      ),
      required: true,
      limit: 1024 * 1024,
    },
    responses: {
      200: { description: 'What the transform returned, and how long the call took.', schema: Type.Object({ output: Type.Unknown({ description: 'The body a URL would get (any JSON value); null: the call is skipped.' }), durationMs: Type.Number({ minimum: 0 }) }, { additionalProperties: false }) },
      400: TransformRefusal('`invalid_request`: a bad field, or `code` that does not compile (`field` "code", with `line` and `column`); `invalid_json`.', '`invalid_request` or `invalid_json`.'),
      413: BodyTooLarge,
      422: TransformRefusal('`transform_failed`: the call failed (a throw, a timeout, out of memory, an output that is not JSON or over 512 KB); the message says why.', '`transform_failed`.'),
    },
  }),
] as const;
