import { copyFileSync, mkdirSync } from 'node:fs';
import { defineConfig } from 'tsup';

const DEBUGGER_FILES = ['index.html', 'app.js', 'app.css'];

export default defineConfig({
  entry: {
    index: 'src/index.ts',
    'webhooks/index': 'src/webhooks/index.ts',
    'forwarder/index': 'src/forwarder/index.ts',
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
  // The debugger page's static files, served by the forwarder from dist/debugger/.
  async onSuccess() {
    mkdirSync('dist/debugger', { recursive: true });
    for (const file of DEBUGGER_FILES) copyFileSync(`src/forwarder/debugger/${file}`, `dist/debugger/${file}`);
  },
});
