import { BIN } from './harness';
import { describeScriptRuntime } from './script-runtime';

describeScriptRuntime('Bun (the bun package from npm): the built package', { command: `${BIN}/bun`, args: [] });
