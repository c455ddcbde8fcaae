/**
 * Writes the OpenAPI document generated from the route declarations (src/http/routes/) to the
 * file named by the first argument: dist/openapi.json, the package's `@eventrelay/forwarder/openapi.json`.
 * Run by the build (tsup.config.ts).
 */
import { writeFileSync } from 'node:fs';
import { apiDocument } from '../src/http/routes';

const target = process.argv[2];
if (target === undefined) throw new Error('usage: write-openapi.ts <file>');
writeFileSync(target, `${JSON.stringify(apiDocument(), null, 2)}\n`);
