import { STATUS_CODES } from 'node:http';
import { describe, it } from 'mocha';
import { expect } from 'chai';
import { statusText } from '../../../src/transport/status-text';

describe('statusText (reason phrases without node:http)', () => {
  it("names every status node:http names, with node:http's words", () => {
    const codes = Object.keys(STATUS_CODES).map(Number);
    expect(codes.length).to.be.greaterThan(50);
    for (const code of codes) expect(statusText(code), String(code)).to.equal(STATUS_CODES[code]);
  });

  it('has nothing for a status node:http does not name', () => {
    for (const code of [0, 199, 299, 306, 499, 599, 999]) expect(statusText(code), String(code)).to.equal(undefined);
  });
});
