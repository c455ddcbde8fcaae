import { describe, it } from 'mocha';
import { expect } from 'chai';
import { NetworkError, TimeoutError } from '../../../src/errors';
import { toNetworkError } from '../../../src/transport/network-errors';
import { redactUrl } from '../../../src/transport/redact';

const socketError = (code: string, message = `connect ${code}`) => Object.assign(new Error(message), { code });

describe('toNetworkError', () => {
  it('connection refused, reset and DNS failures are retryable', () => {
    for (const code of ['ECONNREFUSED', 'ECONNRESET', 'ENOTFOUND', 'EAI_AGAIN', 'EPIPE', 'EHOSTUNREACH']) {
      const error = toNetworkError(socketError(code), 'https://h.example.com/in');
      expect(error, code).to.be.instanceOf(NetworkError).with.property('retryable', true);
      expect(error.message).to.include('https://h.example.com/in');
    }
  });

  it('certificate failures are final, with a code of their own and a hint', () => {
    for (const code of ['DEPTH_ZERO_SELF_SIGNED_CERT', 'SELF_SIGNED_CERT_IN_CHAIN', 'CERT_HAS_EXPIRED', 'ERR_TLS_CERT_ALTNAME_INVALID']) {
      const error = toNetworkError(socketError(code), 'https://h.example.com/in');
      expect(error, code).to.have.property('retryable', false);
      expect(error.code).to.equal('ERR_TLS_CERTIFICATE');
      expect(error.message).to.match(/cannot be turned off/);
    }
  });

  it('keeps the cause and passes our own errors through', () => {
    const cause = socketError('ECONNRESET');
    expect(toNetworkError(cause, 'x').cause).to.equal(cause);
    const timeout = new TimeoutError(300);
    expect(toNetworkError(timeout, 'x')).to.equal(timeout);
  });
});

describe('redactUrl', () => {
  it('drops credentials, query and fragment', () => {
    expect(redactUrl(new URL('https://user:pw@hooks.example.com:8443/in/x?token=abc#frag'))).to.equal('https://hooks.example.com:8443/in/x?[redacted]');
    expect(redactUrl(new URL('http://hooks.example.com/in'))).to.equal('http://hooks.example.com/in');
  });
});
