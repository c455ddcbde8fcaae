import { describe, it } from 'mocha';
import { expect } from 'chai';
import { parseConfig } from '../../src/config';
import { ConfigError } from '../../../eventrelay/src/errors';
import { refused } from './config-refusal';

const sources = [{ name: 'web', writeKey: 'wk-web' }];

const refusal = (config: object): ConfigError => refused({ sources, ...config });

describe('parseConfig: operating options', () => {
  it('turns the delivery log, /metrics and /debugger on by default and erases delivered bodies at once', () => {
    const config = parseConfig({ sources }, {});
    expect(config.storage).to.include({ keepDelivered: 0, deliveryLog: true });
    expect(config.metricsPath).to.equal('/metrics');
    expect(config.debugger).to.equal(true);
  });

  it('reads keepDelivered, deliveryLog, metrics and debugger', () => {
    const config = parseConfig({ sources, storage: { keepDelivered: 3_600_000, deliveryLog: false }, metrics: { path: '/ops/metrics' }, debugger: false }, {});
    expect(config.storage).to.include({ keepDelivered: 3_600_000, deliveryLog: false });
    expect(config.metricsPath).to.equal('/ops/metrics');
    expect(config.debugger).to.equal(false);
    expect(parseConfig({ sources, metrics: false }, {}).metricsPath).to.equal(undefined);
    expect(parseConfig({ sources, metrics: {} }, {}).metricsPath).to.equal('/metrics');
  });

  it('names the field of a bad value', () => {
    expect(refusal({ storage: { keepDelivered: -1 } }).field).to.equal('storage.keepDelivered');
    expect(refusal({ storage: { deliveryLog: 'yes' } }).field).to.equal('storage.deliveryLog');
    expect(refusal({ debugger: 1 }).field).to.equal('debugger');
    expect(refusal({ metrics: true }).field).to.equal('metrics');
    expect(refusal({ metrics: { port: 9 } }).field).to.equal('metrics.port');
    for (const path of ['metrics', '/admin/metrics', '/v1/metrics', '/debugger', '/a b', '/']) {
      const error = refusal({ metrics: { path } });
      expect(error.field, path).to.equal('metrics.path');
    }
  });
});
