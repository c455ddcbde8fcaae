import { expect } from 'chai';
import { defaultTransport, defaultTransportKind, runtimeFeatures } from '../../../src/transport/default';
import { NodeTransport } from '../../../src/transport/node';

describe('the default transport', () => {
  it('is NodeTransport where node:http can be loaded, FetchTransport where it cannot', () => {
    expect(defaultTransportKind({ userAgent: undefined, nodeHttp: true })).to.equal('node');
    expect(defaultTransportKind({ userAgent: 'Bun/1.4.5', nodeHttp: true })).to.equal('node');
    expect(defaultTransportKind({ userAgent: 'Deno/2.9.6', nodeHttp: true })).to.equal('node');
    expect(defaultTransportKind({ userAgent: undefined, nodeHttp: false })).to.equal('fetch');
  });

  it("is FetchTransport on workerd even with nodejs_compat's node:http (itself built on fetch)", () => {
    expect(defaultTransportKind({ userAgent: 'Cloudflare-Workers', nodeHttp: true })).to.equal('fetch');
  });

  it('is NodeTransport on this Node', () => {
    expect(runtimeFeatures().nodeHttp).to.equal(true);
    const transport = defaultTransport();
    expect(transport).to.be.instanceOf(NodeTransport);
    transport.close?.();
  });
});
