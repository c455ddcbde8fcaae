import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, rmSync } from 'node:fs';
import { defineConfig } from 'tsup';
import { DEBUGGER_FILES } from './src/debugger/page';

export default defineConfig({
  entry: {
    index: 'src/index.ts',
    cli: 'src/cli/cli.ts',
  },
  format: ['esm', 'cjs'],
  dts: { entry: { index: 'src/index.ts' } },
  target: 'node20',
  platform: 'node',
  clean: true,
  // No source maps, as in the SDK: they were 2.6 MB of the 4.5 MB package (the sources inside them),
  // and 0.6 MB without the sources. The output is not minified, so a stack trace points at readable
  // code in the installed dist/, which a user can open; a map would point at src/ files the package
  // does not ship, and only under `node --enable-source-maps`.
  sourcemap: false,
  splitting: true,
  shims: true,
  // `eventrelay` (a dependency) stays external: the forwarder loads the SDK's messages, rules,
  // signing and error classes from the installed package, never a bundled copy.
  external: ['eventrelay'],
  async onSuccess() {
    // The debugger page's static files (DEBUGGER_FILES of src/debugger/page.ts: the page and its script's modules, as
    // written, typed with JSDoc and checked by `npm run typecheck`), served by the forwarder from dist/debugger/.
    mkdirSync('dist/debugger/tabs', { recursive: true });
    for (const file of DEBUGGER_FILES) copyFileSync(`src/debugger/${file}`, `dist/debugger/${file}`);
    // The API description the code serves, generated from the route declarations: `@eventrelay/forwarder/openapi.json`.
    execFileSync(process.execPath, ['--import', 'tsx', 'scripts/write-openapi.ts', 'dist/openapi.json'], { stdio: 'inherit' });
    // The CLI runs as ESM only (the `eventrelay` bin is dist/cli.js): its CommonJS build would
    // only weigh on the package. The CommonJS chunk stays, for require('@eventrelay/forwarder').
    rmSync('dist/cli.cjs', { force: true });
  },
});
