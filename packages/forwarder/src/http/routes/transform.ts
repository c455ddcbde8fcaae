import { Type } from '@sinclair/typebox';
import { route } from './define';
import { AdminDisabled, AdminUnauthorized, BodyTooLarge, Unavailable } from './answers';
import { WebhookTransformInput } from './shapes';

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
      401: AdminUnauthorized,
      403: AdminDisabled,
      413: BodyTooLarge,
      422: TransformRefusal('`transform_failed`: the call failed (a throw, a timeout, out of memory, an output that is not JSON or over 512 KB); the message says why.', '`transform_failed`.'),
      503: Unavailable,
    },
  }),
] as const;
