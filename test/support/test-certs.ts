// Certificates made at test time with the openssl command (nothing with a private key is committed): CAs,
// server and client certificates, expired ones included.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

/** PEM files of one certificate. */
export interface CertFiles {
  cert: string;
  key: string;
}

function openssl(args: string[], cwd: string): void {
  execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
}

/** Makes certificates in dir: a CA per ca() call, and leaves signed by one of them. */
export class TestCerts {
  constructor(readonly dir: string) {
    fs.mkdirSync(dir, { recursive: true });
  }

  private key(name: string): string {
    const key = path.join(this.dir, `${name}.key`);
    openssl(['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', key], this.dir);
    return key;
  }

  /** A self-signed CA valid for a day. */
  ca(name: string): CertFiles {
    const key = this.key(name);
    const cert = path.join(this.dir, `${name}.crt`);
    openssl(['req', '-x509', '-new', '-key', key, '-out', cert, '-days', '1', '-subj', `/CN=${name}`, '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign'], this.dir);
    return { cert, key };
  }

  /**
   * A leaf signed by ca, with subject CN cn and the given SANs (e.g. `IP:127.0.0.1`, `DNS:x`, `URI:spiffe://a/b`);
   * days -1 makes one that has already expired.
   */
  leaf(name: string, ca: CertFiles, cn: string, opts: { san?: string[]; days?: number; usage: 'serverAuth' | 'clientAuth' }): CertFiles {
    const key = this.key(name);
    const csr = path.join(this.dir, `${name}.csr`);
    const cert = path.join(this.dir, `${name}.crt`);
    const ext = path.join(this.dir, `${name}.ext`);
    const lines = ['basicConstraints=CA:FALSE', `extendedKeyUsage=${opts.usage}`];
    if (opts.san?.length) lines.push(`subjectAltName=${opts.san.join(',')}`);
    fs.writeFileSync(ext, lines.join('\n') + '\n');
    openssl(['req', '-new', '-key', key, '-out', csr, '-subj', `/CN=${cn}`], this.dir);
    openssl(['x509', '-req', '-in', csr, '-CA', ca.cert, '-CAkey', ca.key, '-CAcreateserial', '-out', cert, '-days', String(opts.days ?? 1), '-extfile', ext], this.dir);
    return { cert, key };
  }
}
