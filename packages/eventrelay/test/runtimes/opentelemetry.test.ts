import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { BIN, DIST, lastJson, requireDist, ROOT, run } from './harness';

const CHECK = fileURLToPath(new URL('./opentelemetry-check.mjs', import.meta.url));

/**
 * The runtimes that load @opentelemetry/api with a `require` (they have `process.getBuiltinModule`): the command before the script.
 * Deno without its V8 code cache: it keeps a CommonJS file's compiled code by path, so after a
 * rebuild dist/webhooks/index.cjs ran as before and required the chunk of the previous build.
 */
const RUNTIMES: { name: string; command: string; args: string[]; env?: Record<string, string> }[] = [
  { name: `Node ${process.version}`, command: process.execPath, args: [] },
  { name: 'Bun', command: `${BIN}/bun`, args: [] },
  { name: 'Deno', command: `${BIN}/deno`, args: ['run', '--no-code-cache', `--allow-read=${ROOT}`, '--allow-env', '--no-prompt'], env: { DENO_NO_UPDATE_CHECK: '1' } },
];

// The built package finds @opentelemetry/api from its own location (the repository's
// node_modules here): in the ESM build through `import.meta.url`, in the CommonJS one through
// the file name tsup's shim gives it. Workers and Edge load no such thing (the runtime tests
// check that their messages carry no trace context); without the package, see test/package/package.test.ts.
describe('the built package with @opentelemetry/api installed, in Node, Bun and Deno', function () {
  this.timeout(60_000);
  before(requireDist);

  for (const runtime of RUNTIMES) {
    for (const format of ['esm', 'cjs']) {
      it(`${runtime.name}, ${format}: track() inside a span stamps its traceparent; the receiver runs the handler in a span of the request's trace`, async () => {
        const output = await run(runtime.command, [...runtime.args, CHECK, format, DIST], { env: runtime.env ?? {} });
        expect(lastJson(output)).to.deep.equal({ stamped: true, status: 204, handlerInTrace: true, spans: ['eventrelay handle', 'request'] });
      });
    }
  }
});
