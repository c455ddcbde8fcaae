import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { VERSION } from '../../src/version';

describe('VERSION', () => {
  it('equals the version in package.json', () => {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
    expect(VERSION).to.equal(pkg.version);
  });
});
