import { BIN, ROOT } from './harness';
import { describeScriptRuntime } from './script-runtime';

// Deno resolves the package's dependencies from the repository's node_modules (its package.json
// mode); it may reach 127.0.0.1 and read the checkout, nothing else.
describeScriptRuntime('Deno (the deno package from npm): the built package', {
  command: `${BIN}/deno`,
  args: ['run', '--allow-net=127.0.0.1', `--allow-read=${ROOT}`, '--allow-env', '--no-prompt'],
  env: { DENO_NO_UPDATE_CHECK: '1' },
});
