import type { Pool, PoolClient } from 'pg';

/**
 * What the forwarder adds to the `pg` driver: values for statements, and connections checked out
 * of a pool (`checkout`, at the end).
 *
 * Values for PostgreSQL statements. Rows go to the server as arrays (`unnest($1::text[], ...)`),
 * written here as array literals: `pg` would escape each element in JavaScript, one call after
 * another, which cost the forwarder more than a native `JSON.stringify` of the whole list.
 *
 * PostgreSQL text cannot hold U+0000, where a client's `messageId` or `userId` may (JSON allows
 * it): it becomes U+FFFD here, as a lone surrogate does in UTF-8, so that one hostile call can
 * never fail the group commit it shares with other requests. Two ids that differ only there are
 * one id to the store.
 */

const QUOTED = /["\\]/g;

/** One string in the form PostgreSQL stores it. */
export function pgText(text: string): string {
  return text.includes('\u0000') || !text.isWellFormed() ? text.toWellFormed().replaceAll('\u0000', '\ufffd') : text;
}

/** A (source, messageId) key as PostgreSQL stores the id: the same in memory and in rows read back. */
export function storedKey(source: string, messageId: string): string {
  return `${source}\u0000${pgText(messageId)}`;
}

/** A `text[]` literal, each element escaped here: `{"a","b\"c",NULL}`. */
function escapedTextArray(values: readonly (string | null | undefined)[]): string {
  let out = '{';
  for (let i = 0; i < values.length; i++) {
    const value = values[i];
    if (i > 0) out += ',';
    if (value === null || value === undefined) {
      out += 'NULL';
      continue;
    }
    const text = value.includes('\u0000') ? value.replaceAll('\u0000', '\ufffd') : value;
    out += `"${text.replace(QUOTED, '\\$&')}"`;
  }
  return `${out}}`;
}

/** A JSON text's escapes other than `\"` and `\\`, which a PostgreSQL array literal would read differently. */
const OTHER_ESCAPES = /\\[bfnrtu/]/;

/**
 * A `text[]` literal: `{"a","b\"c",NULL}`. `JSON.stringify` of the list is that literal but for
 * its brackets when no element needs an escape other than `\"` and `\\` (so no control
 * character, U+0000 or lone surrogate, which webhook bodies, being JSON text, never hold); it is
 * native, about 3 times faster than escaping element by element, which is the fallback.
 */
export function textArray(values: readonly (string | null | undefined)[]): string {
  const json = JSON.stringify(values);
  return OTHER_ESCAPES.test(json) ? escapedTextArray(values) : `{${json.slice(1, -1)}}`;
}

/** A boolean array literal (`boolean[]`): `{t,f}`. */
export function booleanArray(values: readonly boolean[]): string {
  let out = '{';
  for (let i = 0; i < values.length; i++) out += i > 0 ? (values[i] ? ',t' : ',f') : values[i] ? 't' : 'f';
  return `${out}}`;
}

/** A numeric array literal (`bigint[]`, `int[]`): `{1,2,NULL}`. */
export function numberArray(values: readonly (number | null | undefined)[]): string {
  let out = '{';
  for (let i = 0; i < values.length; i++) {
    const value = values[i];
    if (i > 0) out += ',';
    out += value === null || value === undefined ? 'NULL' : String(value);
  }
  return `${out}}`;
}

/** Counter rows per name: each commit adds to a random one, so instances rarely wait on each other. */
const COUNTER_SHARDS = 16;

/** The counter row (shard) a commit adds to. */
export function shard(): number {
  return Math.floor(Math.random() * COUNTER_SHARDS);
}

/** The query in flight fails with the same error, and its caller handles it. */
const ignore = (): void => {};

/**
 * A connection of the pool for several statements (a transaction, a session lock), listened to
 * while it is out. pg's pool listens only to its idle connections: one that ends while checked out
 * (a server restart, a terminated backend) emits `error`, and with no listener that error would end
 * the process. The statement running then fails with it, as does any later one on this connection;
 * `release()` stops listening, and the pool drops a connection that ended.
 */
export async function checkout(pool: Pool): Promise<PoolClient> {
  const client = await pool.connect();
  client.on('error', ignore);
  const release = client.release.bind(client);
  client.release = (error?: Error | boolean) => {
    client.removeListener('error', ignore);
    release(error);
  };
  return client;
}
