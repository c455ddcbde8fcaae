import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { DIST, lastJson, requireDist, run } from './harness';

const CHECK = fileURLToPath(new URL('./opentelemetry-check.mjs', import.meta.url));

// The built package finds @opentelemetry/api from its own location (the repository's
// node_modules here): in the ESM build through `import.meta.url`, in the CommonJS one through
// the file name tsup's shim gives it. Without the package, see test/package/package.test.ts.
describe(`Node ${process.version}: the built package with @opentelemetry/api installed`, function () {
  this.timeout(30_000);
  before(requireDist);

  for (const format of ['esm', 'cjs']) {
    it(`${format}: track() inside a span stamps its traceparent; the receiver runs the handler in a span of the request's trace`, async () => {
      const output = await run(process.execPath, [CHECK, format, DIST]);
      expect(lastJson(output)).to.deep.equal({ stamped: true, status: 204, handlerInTrace: true, spans: ['eventrelay handle', 'request'] });
    });
  }
});
