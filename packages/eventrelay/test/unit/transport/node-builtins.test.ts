import tls from 'node:tls';
import { describe, it } from 'mocha';
import { expect } from 'chai';
import { trustedCertificates } from '../../../src/transport/node-builtins';

const PEM = '-----BEGIN CERTIFICATE-----\nMIIBtest\n-----END CERTIFICATE-----\n';

describe('trustedCertificates (the `ca` option of the Node transports)', () => {
  it("adds the extra PEM certificates to Node's root store", () => {
    const trusted = trustedCertificates(tls, PEM);
    expect(trusted.slice(0, -1)).to.deep.equal([...tls.rootCertificates]);
    expect(trusted.at(-1)).to.equal(PEM);
  });

  it('takes a Buffer, a Uint8Array or a list of them and strings as the same PEM text', () => {
    const bytes = new TextEncoder().encode(PEM);
    const extra = (ca: Parameters<typeof trustedCertificates>[1]) => trustedCertificates({ rootCertificates: [] }, ca);
    expect(extra(Buffer.from(PEM))).to.deep.equal([PEM]);
    expect(extra(bytes)).to.deep.equal([PEM]);
    // A view into a larger buffer: only its own bytes count.
    const view = new TextEncoder().encode(`--${PEM}--`).subarray(2, 2 + bytes.length);
    expect(extra([PEM, view, Buffer.from(PEM)])).to.deep.equal([PEM, PEM, PEM]);
  });
});
