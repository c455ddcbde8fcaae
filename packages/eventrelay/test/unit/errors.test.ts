import { expect } from 'chai';
import * as one from '../../src/errors';

type Errors = typeof one;
type ErrorClass = abstract new (...args: never[]) => one.EventRelayError;

/**
 * A second, separate copy of errors.ts, as when the ESM and the CommonJS build of eventrelay (or
 * two installed versions) are loaded side by side: same classes, different objects.
 */
async function loadCopy(): Promise<Errors> {
  const specifier = new URL('../../src/errors.ts?second-copy', import.meta.url).href;
  return (await import(specifier)) as Errors;
}

function classesOf(errors: Errors): Map<string, ErrorClass> {
  return new Map(Object.entries(errors).filter(([, value]) => typeof value === 'function') as [string, ErrorClass][]);
}

describe('error classes across copies of eventrelay', () => {
  let two: Errors;

  before(async () => {
    two = await loadCopy();
    // Without two distinct copies, nothing below would prove anything.
    expect(two.ConfigError).to.not.equal(one.ConfigError);
    expect(two.ConfigError.prototype).to.not.equal(one.ConfigError.prototype);
  });

  it('an error made by one copy is an instance of its class and of each ancestor in the other, both ways', () => {
    const made = (errors: Errors) => ({
      config: new errors.ConfigError('bad', 'sources'),
      timeout: new errors.TimeoutError(5000),
      stale: new errors.WebhookTimestampError(1, 600_000, 300_000),
      store: new errors.StoreError('closed', 'ERR_STORE_CLOSED'),
    });
    for (const [from, to] of [[one, two], [two, one]] as const) {
      const e = made(from);
      expect(e.config).to.be.instanceOf(to.ConfigError).and.instanceOf(to.EventRelayError).and.instanceOf(Error);
      expect(e.timeout).to.be.instanceOf(to.TimeoutError).and.instanceOf(to.NetworkError).and.instanceOf(to.EventRelayError);
      expect(e.stale).to.be.instanceOf(to.WebhookTimestampError).and.instanceOf(to.SignatureVerificationError);
      expect(e.store).to.be.instanceOf(to.StoreError).and.instanceOf(to.EventRelayError);
      expect(e.config).to.not.be.instanceOf(to.ValidationError);
      expect(e.timeout).to.not.be.instanceOf(to.HttpError);
      expect(e.store).to.not.be.instanceOf(to.ConfigError);
    }
  });

  it('answers exactly as the class tree says, for every pair of classes and both copies', () => {
    const first = classesOf(one);
    const second = classesOf(two);
    expect([...first.keys()]).to.include.members(['EventRelayError', 'ConfigError', 'ValidationError', 'TimeoutError', 'NotReplayableError']);
    expect([...second.keys()]).to.deep.equal([...first.keys()]);
    let related = 0;
    for (const [made, Made] of first) {
      for (const [asked, Asked] of first) {
        // The ordinary answer, from the prototype chain of one copy.
        const expected = made === asked || Object.prototype.isPrototypeOf.call(Asked.prototype, Made.prototype);
        if (expected) related += 1;
        const instance: unknown = Object.create(Made.prototype);
        expect(instance instanceof Asked, `${made} instanceof ${asked}, same copy`).to.equal(expected);
        expect(instance instanceof second.get(asked)!, `${made} instanceof ${asked}, other copy`).to.equal(expected);
        const other: unknown = Object.create(second.get(made)!.prototype);
        expect(other instanceof Asked, `${made} of the other copy instanceof ${asked}`).to.equal(expected);
      }
    }
    // Each class is its own and an EventRelayError; TimeoutError and WebhookTimestampError add one more each.
    expect(related).to.equal(2 * first.size - 1 + 2);
  });

  it('a subclass written outside eventrelay keeps the ordinary check for itself', () => {
    class AppConfigError extends one.ConfigError {}
    const mine = new AppConfigError('app', 'x');
    expect(mine).to.be.instanceOf(AppConfigError).and.instanceOf(one.ConfigError).and.instanceOf(two.ConfigError).and.instanceOf(two.EventRelayError);
    expect(new one.ConfigError('plain')).to.not.be.instanceOf(AppConfigError);
    expect(new two.ConfigError('plain')).to.not.be.instanceOf(AppConfigError);
  });

  it('nothing else passes: plain errors, look-alikes and non-objects', () => {
    const lookAlike = Object.assign(new Error('bad'), { name: 'ConfigError', code: 'ERR_CONFIG', field: 'x' });
    const values: unknown[] = [new Error('bad'), lookAlike, {}, Object.create(null), null, undefined, 'ConfigError', 1];
    values.forEach((value, index) => {
      for (const errors of [one, two]) {
        expect(value instanceof errors.ConfigError, `value ${index}`).to.equal(false);
        expect(value instanceof errors.EventRelayError, `value ${index}`).to.equal(false);
      }
    });
  });
});
