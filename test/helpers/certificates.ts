import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface TestCertificates {
  /** A leaf that signed itself, for 127.0.0.1. */
  readonly selfSigned: { key: string; cert: string };
  /** A private CA (itself self-signed) ... */
  readonly ca: string;
  /** ... and a leaf for 127.0.0.1 it signed; `chain` is leaf + CA as a server would send it. */
  readonly leaf: { key: string; cert: string; chain: string };
}

/**
 * Makes throw-away certificates with the openssl CLI. They are returned as PEM text and their
 * temporary directory is removed before this returns, whatever happens: nothing is left behind.
 */
export function makeCertificates(): TestCertificates {
  const dir = mkdtempSync(join(tmpdir(), 'eventrelay-certs-'));
  try {
    return makeIn(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function makeIn(dir: string): TestCertificates {
  const file = (name: string) => join(dir, name);
  const openssl = (...args: string[]) => execFileSync('openssl', args, { stdio: 'pipe' });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

  openssl('req', '-x509', ...ec, '-keyout', file('self.key'), '-out', file('self.crt'), '-days', '2',
    '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1');

  openssl('req', '-x509', ...ec, '-keyout', file('ca.key'), '-out', file('ca.crt'), '-days', '2',
    '-subj', '/CN=EventRelay Test CA',
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign');
  openssl('req', ...ec, '-keyout', file('leaf.key'), '-out', file('leaf.csr'), '-subj', '/CN=127.0.0.1');
  writeFileSync(file('leaf.ext'), 'subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n');
  openssl('x509', '-req', '-in', file('leaf.csr'), '-CA', file('ca.crt'), '-CAkey', file('ca.key'), '-CAcreateserial',
    '-out', file('leaf.crt'), '-days', '2', '-extfile', file('leaf.ext'));

  const read = (name: string) => readFileSync(file(name), 'utf8');
  return {
    selfSigned: { key: read('self.key'), cert: read('self.crt') },
    ca: read('ca.crt'),
    leaf: { key: read('leaf.key'), cert: read('leaf.crt'), chain: read('leaf.crt') + read('ca.crt') },
  };
}
