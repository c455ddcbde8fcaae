import { isPlainObject } from 'eventrelay/internal';
/**
 * Spec 4.3: a message's `integrations` map turns destinations on or off per call.
 *
 * - No map (or not an object): every destination is on.
 * - The destination's own key decides when it is set: `false` turns it off, `true` or an
 *   object (per-destination options) turns it on, even under `All: false`.
 * - Otherwise `All: false` turns it off; anything else leaves it on.
 * - Keys are case sensitive: `webhooks` does not address `Webhooks`.
 *
 * Values other than booleans and objects (null, numbers, strings) count as "not set".
 */
export function isDestinationEnabled(integrations: unknown, name: string): boolean {
  if (!isPlainObject(integrations)) return true;
  const own = Object.hasOwn(integrations, name) ? integrations[name] : undefined;
  if (own === false) return false;
  if (own === true || isPlainObject(own)) return true;
  const all = Object.hasOwn(integrations, 'All') ? integrations.All : undefined;
  return all !== false;
}
