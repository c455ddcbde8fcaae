import createDebug from 'debug';
import { showValue } from '../internal/values';
import { emitWarning } from '../internal/warning';

export { emitWarning };

const log = createDebug('analytics');

/** Option names already warned about, per layer: each is reported once per process. */
const warned = new Set<string>();

/** What a compatibility layer knows about the options it is given. */
export interface OptionCatalog {
  /** The layer's name as it appears in warnings, e.g. `eventrelay/segment`. */
  readonly layer: string;
  /** Options the layer honours. */
  readonly known: ReadonlySet<string>;
  /** Options of the original SDK the layer does not honour, with the reason and what to do. */
  readonly unsupported: Readonly<Record<string, string>>;
}

/**
 * Warns once per process about every option the layer does not honour: a warning
 * (`EventRelayWarning`, code `EVENTRELAY_UNSUPPORTED_OPTION` or `EVENTRELAY_UNKNOWN_OPTION`,
 * see `emitWarning`) and a line in the `analytics` debug log. Options set to
 * `undefined` count as not given. Only option names appear in the warning, never values.
 */
export function warnAboutOptions(options: object, catalog: OptionCatalog): void {
  for (const key of Object.keys(options)) {
    if (catalog.known.has(key) || (options as Record<string, unknown>)[key] === undefined) continue;
    const id = `${catalog.layer}\0${key}`;
    if (warned.has(id)) continue;
    warned.add(id);
    const reason = Object.hasOwn(catalog.unsupported, key) ? catalog.unsupported[key] : undefined;
    const message =
      reason !== undefined
        ? `${catalog.layer}: the \`${key}\` option is not supported and is ignored: ${reason}`
        : `${catalog.layer}: unknown option ${key.length <= 40 ? `\`${key}\`` : showValue(key)} is ignored (a typo?). Known options: ${[...catalog.known].join(', ')}`;
    log(message);
    emitWarning(message, reason !== undefined ? 'EVENTRELAY_UNSUPPORTED_OPTION' : 'EVENTRELAY_UNKNOWN_OPTION');
  }
}
