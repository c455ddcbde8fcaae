import createDebug from 'debug';
import { ConfigError, describeType, integerOption } from 'eventrelay/internal';
import type { ResolvedWebhooks } from '../config';
import { fail, send } from '../http/server';
import { DEFAULT_GRACE_SECONDS, MAX_GRACE_SECONDS } from '../registry/keys';
import type { AdminHandlers } from './sources';
import type { SetupResult } from '../registry/manager';
import type { PreviousSecret, SetupOp, SetupSnapshot, SetupWriteResult, StoredWebhooks } from '../store/contract';

const log = createDebug('eventrelay:forwarder');

/** A rotation's body, as its route checks it. */
export interface RotationRequest {
  readonly sharedSecret: string;
  /** 0 to MAX_GRACE_SECONDS. */
  readonly graceSeconds?: number;
}

/** What a rotation answers: never a secret. */
export interface RotatedSecret {
  readonly source: string;
  readonly signing: string;
  /**
   * When the secrets it replaced stop signing (ISO 8601): until then Standard Webhooks requests
   * carry a signature with each of them too. Null when there was none (the destination was unsigned).
   */
  readonly previousSecretsValidUntil: string | null;
}

/** What a rotation needs of the forwarder. */
export interface SecretHost {
  snapshot(): Promise<SetupSnapshot>;
  /** Writes to the store's setup and applies the change to this instance before it resolves. */
  write(ops: readonly SetupOp[]): Promise<SetupWriteResult>;
  /** Checks settings the way a destination would (a `whsec_` secret that is not base64): ConfigError. */
  checkSettings(settings: ResolvedWebhooks): void;
  now(): number;
}

/**
 * `POST /admin/sources/{name}/destinations/Webhooks/secret { sharedSecret, graceSeconds? }`: the
 * new secret signs from now on (`X-Signature` with it alone); the one it replaces keeps signing
 * Standard Webhooks requests beside it for `graceSeconds` (default 86400), then stops. Secrets
 * replaced earlier keep the end their own rotation gave them.
 */
export async function rotateSecret(host: SecretHost, name: string, body: RotationRequest): Promise<SetupResult<RotatedSecret>> {
  const secret = body.sharedSecret;
  // The route's schema checked the types; `Forwarder#rotateSharedSecret` comes here directly, so the values are checked here.
  if (typeof secret !== 'string' || secret.trim() === '') {
    throw new ConfigError(`Expected \`sharedSecret\` to be a non-empty string, got ${typeof secret === 'string' ? 'a string of spaces only' : describeType(secret)}`, 'sharedSecret');
  }
  const grace = integerOption('graceSeconds', body.graceSeconds ?? DEFAULT_GRACE_SECONDS, 0, MAX_GRACE_SECONDS);
  const snapshot = await host.snapshot();
  const record = snapshot.sources.find((s) => s.name === name);
  if (record === undefined) return { ok: false, status: 404, code: 'not_found', message: `No source ${JSON.stringify(name)}`, field: 'name' };
  if (record.webhooks === undefined) {
    return { ok: false, status: 404, code: 'not_found', message: `The source ${JSON.stringify(name)} has no Webhooks destination; PUT one first` };
  }
  const now = host.now();
  const until = now + grace * 1000;
  const current = record.webhooks.sharedSecret;
  const replaced = (current === undefined ? [] : typeof current === 'string' ? [current] : current).filter((s) => s !== secret);
  const previousSecrets: PreviousSecret[] = [
    ...replaced.map((s) => ({ secret: s, until })),
    ...(record.webhooks.previousSecrets ?? []).filter((p) => p.secret !== secret && !replaced.includes(p.secret)),
  ].filter((p) => p.until > now);
  const { previousSecrets: _old, ...rest } = record.webhooks;
  const webhooks: StoredWebhooks = previousSecrets.length === 0 ? { ...rest, sharedSecret: secret } : { ...rest, sharedSecret: secret, previousSecrets };
  // Named `sharedSecret` in errors, as the request's field.
  try {
    host.checkSettings({ ...webhooks, enabled: record.enabled });
  } catch (error) {
    if (error instanceof ConfigError && error.field?.startsWith('sharedSecret')) throw new ConfigError(error.message, 'sharedSecret');
    throw error;
  }
  const result = await host.write([{ op: 'update', name, at: now, webhooks }]);
  if (!result.ok) return { ok: false, status: 404, code: 'not_found', message: `No source ${JSON.stringify(name)}`, field: 'name' };
  log('source %s: shared secret rotated (grace %d s)', name, grace);
  const validUntil = replaced.length === 0 ? null : new Date(until).toISOString();
  return { ok: true, value: { source: name, signing: webhooks.signing, previousSecretsValidUntil: validUntil } };
}

/** The host the route gets from the admin API's options. */
export interface SecretRoutesOptions {
  readonly secrets?: SecretHost;
}

/** The handler of `POST /admin/sources/{name}/destinations/Webhooks/secret` (http/routes/sources.ts). */
export const SECRET_HANDLERS = {
  rotateSecret: async (o, { params, body }, _req, res) => {
    if (o.secrets === undefined) throw new Error('secret route without a SecretHost');
    const result = await rotateSecret(o.secrets, params.name, body);
    const noStore = { 'Cache-Control': 'no-store' };
    if (result.ok) send(res, 200, result.value, noStore);
    else fail(res, result.status, result.code, result.message, result.field === undefined ? {} : { field: result.field }, noStore);
  },
} satisfies AdminHandlers<SecretRoutesOptions>;
