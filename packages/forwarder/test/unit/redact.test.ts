import { describe, it } from 'mocha';
import { expect } from 'chai';
import { redactUrl } from '../../src/redact';

describe('redactUrl (src/redact.ts: the CLI and the PostgreSQL store show URLs through it)', () => {
  it('replaces the password with *** and keeps the rest', () => {
    expect(redactUrl('postgres://app:s3cret@db.example:5432/events')).to.equal('postgres://app:***@db.example:5432/events');
    expect(redactUrl('http://127.0.0.1:8080/')).to.equal('http://127.0.0.1:8080/');
  });

  it('shows no part of a URL that does not parse, which may hold a password', () => {
    expect(redactUrl('postgres://app:s3cret@[bad')).to.equal('a URL that does not parse');
  });
});
