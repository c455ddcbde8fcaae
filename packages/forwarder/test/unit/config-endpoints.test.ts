import { describe, it } from 'mocha';
import { expect } from 'chai';
import { parseConfig } from '../../src/config';
import { ConfigError } from '../../../eventrelay/src/errors';

describe('parseConfig: endpoint protection', () => {
  it('delivery.disableAfter: 24 h by default, 0 for never, else a duration in ms naming the field', () => {
    expect(parseConfig({}, {}).delivery.disableAfter).to.equal(86_400_000);
    expect(parseConfig({ delivery: { disableAfter: 0 } }, {}).delivery.disableAfter).to.equal(0);
    expect(parseConfig({ delivery: { disableAfter: 3_600_000 } }, {}).delivery.disableAfter).to.equal(3_600_000);
    for (const bad of [-1, 1.5, '1d', true]) {
      expect(() => parseConfig({ delivery: { disableAfter: bad } }, {})).to.throw(ConfigError).with.property('field', 'delivery.disableAfter');
    }
  });
});
