import { expect } from 'chai';
import { ValidationError } from '../../../src/errors';
import { MESSAGE_TYPES } from '../../../src/messages/calls';
import { CALL_FIELDS, readCall, validateParams } from '../../../src/messages/rules';

describe('validateParams (spec 2.4)', () => {
  it('accepts a call with userId, with anonymousId, or with both', () => {
    expect(validateParams('track', { userId: 'u1', event: 'E' })).to.equal(undefined);
    expect(validateParams('identify', { anonymousId: 'a1' })).to.equal(undefined);
    expect(validateParams('page', { userId: 'u1', anonymousId: 'a1', name: 'Home' })).to.equal(undefined);
  });

  for (const type of ['identify', 'track', 'page', 'screen', 'group'] as const) {
    it(`refuses ${type} without userId and anonymousId`, () => {
      const error = validateParams(type, { event: 'E', groupId: 'g' });
      expect(error).to.be.instanceOf(ValidationError);
      expect(error?.message).to.equal(`${type === 'identify' ? 'An' : 'A'} ${type} message needs \`userId\` or \`anonymousId\` (a non-empty string or a number); neither was given`);
      expect(error?.field).to.equal('userId');
    });
  }

  it('treats empty strings as missing', () => {
    expect(validateParams('identify', { userId: '', anonymousId: '' })).to.be.instanceOf(ValidationError);
  });

  it('needs event on track, groupId on group, userId and previousId on alias', () => {
    expect(validateParams('track', { userId: 'u' })?.field).to.equal('event');
    expect(validateParams('track', { userId: 'u', event: '' })?.message).to.match(/event.*empty string/);
    expect(validateParams('group', { userId: 'u' })?.field).to.equal('groupId');
    expect(validateParams('alias', { previousId: 'p' })?.field).to.equal('userId');
    expect(validateParams('alias', { userId: 'u' })?.field).to.equal('previousId');
    expect(validateParams('alias', { userId: 'u', previousId: 'p' })).to.equal(undefined);
  });

  it('checks the types of optional fields', () => {
    expect(validateParams('track', { userId: 'u', event: 'E', properties: [] })?.message).to.equal(
      'A track message needs `properties` as an object when given, got an array',
    );
    expect(validateParams('identify', { userId: 'u', traits: 'x' })?.field).to.equal('traits');
    expect(validateParams('identify', { userId: true })?.message).to.match(/userId.*`true` \(boolean\)/);
    expect(validateParams('identify', { userId: Number.NaN })?.field).to.equal('userId');
    expect(validateParams('page', { userId: 'u', name: 3 })?.field).to.equal('name');
    expect(validateParams('track', { userId: 'u', event: 'E', context: [] })?.field).to.equal('context');
    expect(validateParams('track', { userId: 'u', event: 'E', context: null })).to.equal(undefined);
    expect(validateParams('track', { userId: 'u', event: 'E', integrations: true })?.field).to.equal('integrations');
  });

  it('accepts a Date or an ISO string as timestamp and refuses anything else', () => {
    expect(validateParams('track', { userId: 'u', event: 'E', timestamp: new Date() })).to.equal(undefined);
    expect(validateParams('track', { userId: 'u', event: 'E', timestamp: '2020-01-01T00:00:00Z' })).to.equal(undefined);
    expect(validateParams('track', { userId: 'u', event: 'E', timestamp: 'yesterday' })?.field).to.equal('timestamp');
    expect(validateParams('track', { userId: 'u', event: 'E', timestamp: new Date(NaN) })?.field).to.equal('timestamp');
    expect(validateParams('track', { userId: 'u', event: 'E', timestamp: 1 })?.field).to.equal('timestamp');
  });

  it('accepts numeric ids, as the forwarder does (one id policy)', () => {
    expect(validateParams('identify', { userId: 42 })).to.equal(undefined);
    expect(validateParams('group', { anonymousId: 0, groupId: 7 })).to.equal(undefined);
    expect(validateParams('alias', { userId: 2, previousId: 1 })).to.equal(undefined);
  });

  it('limits messageId to 200 characters', () => {
    expect(validateParams('track', { userId: 'u', event: 'E', messageId: 'm'.repeat(200) })).to.equal(undefined);
    expect(validateParams('track', { userId: 'u', event: 'E', messageId: 'm'.repeat(201) })?.field).to.equal('messageId');
  });

  it('refuses timestamps whose webhook form would not be YYYY-MM-DDTHH:mm:ss.sssZ', () => {
    for (const timestamp of [new Date('+010000-01-01T00:00:00Z'), new Date('-000001-01-01T00:00:00Z'), '9999-12-31T23:30:00-01:00', '2020-01-01']) {
      expect(validateParams('track', { userId: 'u', event: 'E', timestamp })?.field, String(timestamp)).to.equal('timestamp');
    }
    expect(validateParams('track', { userId: 'u', event: 'E', timestamp: new Date('9999-12-31T23:59:59.999Z') })).to.equal(undefined);
    expect(validateParams('track', { userId: 'u', event: 'E', timestamp: '0000-01-01T00:00:00Z' })).to.equal(undefined);
  });

  it('reads a Date through the intrinsic getTime, so a Date whose methods throw is still read', () => {
    const date = new Date('2020-01-01T00:00:00Z');
    date.getTime = () => {
      throw new Error('hostile');
    };
    expect(validateParams('track', { userId: 'u', event: 'E', timestamp: date })).to.equal(undefined);
  });

  it('refuses parameters that are not an object', () => {
    expect(validateParams('track', undefined)?.message).to.equal('track() takes an object of parameters, got nothing');
    expect(validateParams('track', 'x')).to.be.instanceOf(ValidationError);
  });

  it('reads the fields each call sends, once each, in CALL_FIELDS order, and nothing else', () => {
    for (const type of MESSAGE_TYPES) {
      const read: PropertyKey[] = [];
      const params = new Proxy({ userId: 'u', event: 'E', groupId: 'g', previousId: 'p', traits: {}, extra: 1 }, {
        get(target, key, receiver) {
          read.push(key);
          return Reflect.get(target, key, receiver);
        },
      });
      const call = readCall(type, params);
      expect(read, type).to.deep.equal(CALL_FIELDS[type]);
      expect(call.type).to.equal(type);
      expect(call.userId).to.equal('u');
    }
  });
});
