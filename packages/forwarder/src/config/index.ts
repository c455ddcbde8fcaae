import type { Static } from '@sinclair/typebox';
import type { ConfigFile, SourceSchemaInput, WebhooksDestinationInput } from './shapes';
import type { ForwarderConfig, SourceSchemaConfig, WebhooksDestinationConfig } from './types';

/*
 * The config file: its shape (shapes.ts, TypeBox schemas), its types (types.ts), its rules
 * (parse.ts for the file, sources.ts for a source and the parts the admin API sets alone).
 */

export * from './types';
export { CONFIG_DEFAULTS, loadConfigFile, parseConfig } from './parse';
export type { ConfigPart, ParseOptions } from './parse';
export { emptySettings, parseSources, schemaControls, sourceName, sourceSettings, webhooksDestination } from './sources';
export { INGEST_LIMIT_BOUNDS, MAX_ALLOWED_ORIGINS, MAX_ORIGIN_LENGTH, MAX_TRUSTED_PROXIES } from './shapes';

/** The typed config and its schema agree: what the schema takes is a config (checked by the compiler). */
type Agrees<Schema, Type> = Schema extends Type ? true : never;
export const SHAPES_AGREE: [
  Agrees<Static<typeof ConfigFile>, ForwarderConfig>,
  Agrees<Static<typeof WebhooksDestinationInput>, WebhooksDestinationConfig>,
  Agrees<Static<typeof SourceSchemaInput>, SourceSchemaConfig>,
] = [true, true, true];
