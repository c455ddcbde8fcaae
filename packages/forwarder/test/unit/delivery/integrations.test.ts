import { describe, it } from 'mocha';
import { expect } from 'chai';
import { isDestinationEnabled } from '../../../src/delivery/integrations';

describe('isDestinationEnabled (spec 4.3)', () => {
  it('is on by default: no map, an empty map, or a map that names other destinations', () => {
    expect(isDestinationEnabled(undefined, 'Webhooks')).to.equal(true);
    expect(isDestinationEnabled(null, 'Webhooks')).to.equal(true);
    expect(isDestinationEnabled({}, 'Webhooks')).to.equal(true);
    expect(isDestinationEnabled({ Mixpanel: false }, 'Webhooks')).to.equal(true);
  });

  it('is off when its own key is false, even with All: true', () => {
    expect(isDestinationEnabled({ Webhooks: false }, 'Webhooks')).to.equal(false);
    expect(isDestinationEnabled({ All: true, Webhooks: false }, 'Webhooks')).to.equal(false);
  });

  it('All: false turns it off unless its own key is true or an object', () => {
    expect(isDestinationEnabled({ All: false }, 'Webhooks')).to.equal(false);
    expect(isDestinationEnabled({ All: false, Mixpanel: true }, 'Webhooks')).to.equal(false);
    expect(isDestinationEnabled({ All: false, Webhooks: true }, 'Webhooks')).to.equal(true);
    expect(isDestinationEnabled({ All: false, Webhooks: { someOption: 1 } }, 'Webhooks')).to.equal(true);
  });

  it('keys are case sensitive', () => {
    expect(isDestinationEnabled({ webhooks: false }, 'Webhooks')).to.equal(true);
    expect(isDestinationEnabled({ All: false, webhooks: true }, 'Webhooks')).to.equal(false);
    expect(isDestinationEnabled({ all: false }, 'Webhooks')).to.equal(true);
  });

  it('values that are neither boolean nor object count as not set', () => {
    expect(isDestinationEnabled({ All: false, Webhooks: 'yes' }, 'Webhooks')).to.equal(false);
    expect(isDestinationEnabled({ Webhooks: null }, 'Webhooks')).to.equal(true);
  });

  it('ignores inherited keys and a map that is not an object', () => {
    const inherited = Object.create({ Webhooks: false, All: false }) as object;
    expect(isDestinationEnabled(inherited, 'Webhooks')).to.equal(true);
    expect(isDestinationEnabled('All', 'Webhooks')).to.equal(true);
    expect(isDestinationEnabled([false], 'Webhooks')).to.equal(true);
  });
});
