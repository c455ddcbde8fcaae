import { expect } from 'chai';
import { parseConfig } from '../../src/config';
import { ConfigError } from '../../../eventrelay/src/errors';

/** The ConfigError `fn` throws; the test fails when it throws none, or another error. */
export function configErrorOf(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (error) {
    expect(error).to.be.instanceOf(ConfigError);
    return error as ConfigError;
  }
  expect.fail('expected a ConfigError');
}

/** The ConfigError parseConfig throws for `config`, its secrets read from `env`. */
export function refused(config: unknown, env: Record<string, string> = {}): ConfigError {
  return configErrorOf(() => parseConfig(config, env));
}
