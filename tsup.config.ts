import { copyFileSync, mkdirSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { defineConfig } from 'tsup';

// `require('analytics-node')` returns the class itself; so does `require('eventrelay/analytics-node')`,
// with the named exports (`Analytics`, `default`, the errors) as its properties.
const CLASSIC_REQUIRE = `'use strict';
const classic = require('./index.cjs');
module.exports = Object.assign(classic.Analytics, classic);
`;

const DEBUGGER_FILES = ['index.html', 'app.js', 'app.css'];

export default defineConfig({
  entry: {
    index: 'src/index.ts',
    'webhooks/index': 'src/webhooks/index.ts',
    'forwarder/index': 'src/forwarder/index.ts',
    'segment/index': 'src/compat/segment/index.ts',
    'analytics-node/index': 'src/compat/analytics-node/index.ts',
    cli: 'src/forwarder/cli/cli.ts',
  },
  format: ['esm', 'cjs'],
  dts: true,
  target: 'node20',
  platform: 'node',
  clean: true,
  sourcemap: true,
  splitting: true,
  shims: true,
  async onSuccess() {
    await writeFile('dist/analytics-node/require.cjs', CLASSIC_REQUIRE);
    // The debugger page's static files, served by the forwarder from dist/debugger/.
    mkdirSync('dist/debugger', { recursive: true });
    for (const file of DEBUGGER_FILES) copyFileSync(`src/forwarder/debugger/${file}`, `dist/debugger/${file}`);
  },
});
