import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { apiDocument } from '../../src/http/routes';
import { FORWARDER_VERSION } from '../../src/version';

describe('FORWARDER_VERSION', () => {
  it('equals the version in the forwarder package.json (what `eventrelay --version` prints)', () => {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
    expect(FORWARDER_VERSION).to.equal(pkg.version);
  });

  it('pins the eventrelay dependency to the same version: the two packages are released together', () => {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { dependencies: Record<string, string> };
    expect(pkg.dependencies.eventrelay).to.equal(FORWARDER_VERSION);
  });

  it('is the version of the API description (served, and written to dist/openapi.json by the build)', () => {
    const doc = apiDocument() as { info: { version: string } };
    expect(doc.info.version).to.equal(FORWARDER_VERSION);
  });
});
