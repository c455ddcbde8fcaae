import { writeFile } from 'node:fs/promises';
import { defineConfig } from 'tsup';

// `require('analytics-node')` returns the class itself; so does `require('eventrelay/analytics-node')`,
// with the named exports (`Analytics`, `default`, the errors) as its properties. Its types are
// written by hand in types/analytics-node.d.cts (`export =`, which the generated .d.cts cannot say).
const CLASSIC_REQUIRE = `'use strict';
const classic = require('./index.cjs');
module.exports = Object.assign(classic.Analytics, classic);
`;

export default defineConfig({
  entry: {
    index: 'src/index.ts',
    'webhooks/index': 'src/webhooks/index.ts',
    'segment/index': 'src/compat/segment/index.ts',
    'analytics-node/index': 'src/compat/analytics-node/index.ts',
    // What @eventrelay/forwarder loads from the SDK (messages, rules, signing, errors): one copy.
    'shared/index': 'src/shared/index.ts',
  },
  format: ['esm', 'cjs'],
  dts: true,
  target: 'node20',
  platform: 'node',
  clean: true,
  // No source maps: they were more than half of the installed package (the 1.5 MB budget), and
  // the output is not minified, so stack traces already point at readable code.
  sourcemap: false,
  splitting: true,
  shims: true,
  async onSuccess() {
    await writeFile('dist/analytics-node/require.cjs', CLASSIC_REQUIRE);
  },
});
