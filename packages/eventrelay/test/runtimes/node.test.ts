import { describeScriptRuntime } from './script-runtime';

describeScriptRuntime(`Node ${process.version}: the built package`, { command: process.execPath, args: [] });
