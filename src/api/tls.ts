// Transport credentials of the agent API. The unix socket is plaintext (its file mode and group guard it);
// TCP is mutual TLS only: the agent presents --tls-cert and accepts only clients whose certificate chains
// to --client-ca (expired or foreign certificates fail the handshake). There is no plaintext TCP mode.
import { X509Certificate, createPrivateKey, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import * as grpc from '@grpc/grpc-js';
import { AgentError } from '../errors.js';
import { unixPath } from './address.js';

/** The daemon's TLS files (PEM). */
export interface ServerTlsFiles {
  cert?: string;
  key?: string;
  clientCa?: string;
}

/** The client's TLS files (PEM) and the name the agent's certificate must carry, when not the target host. */
export interface ClientTlsFiles {
  cert?: string;
  key?: string;
  ca?: string;
  serverName?: string;
}

function readPem(flag: string, file: string): Buffer {
  try {
    return readFileSync(file);
  } catch (err) {
    throw new AgentError('InvalidArgument', `${flag} ${file}: cannot read it (${(err as NodeJS.ErrnoException).code ?? String(err)})`);
  }
}

function parseCert(flag: string, file: string, pem: Buffer): X509Certificate {
  try {
    return new X509Certificate(pem);
  } catch (err) {
    throw new AgentError('InvalidArgument', `${flag} ${file}: not a PEM certificate (${(err as Error).message})`);
  }
}

function parseKey(flag: string, file: string, pem: Buffer): KeyObject {
  try {
    return createPrivateKey(pem);
  } catch (err) {
    throw new AgentError('InvalidArgument', `${flag} ${file}: not a PEM private key (${(err as Error).message})`);
  }
}

/** Checks that a certificate/key pair is well-formed, matching and current; returns the PEM buffers. */
function keyPair(flags: [string, string], files: [string, string], now: Date): { cert: Buffer; key: Buffer } {
  const cert = readPem(flags[0], files[0]);
  const key = readPem(flags[1], files[1]);
  const x509 = parseCert(flags[0], files[0], cert);
  if (!x509.checkPrivateKey(parseKey(flags[1], files[1], key))) {
    throw new AgentError('InvalidArgument', `${flags[1]} ${files[1]} is not the private key of ${flags[0]} ${files[0]}`);
  }
  if (new Date(x509.validTo) < now) throw new AgentError('InvalidArgument', `${flags[0]} ${files[0]} expired on ${x509.validTo}`);
  if (new Date(x509.validFrom) > now) throw new AgentError('InvalidArgument', `${flags[0]} ${files[0]} is not valid before ${x509.validFrom}`);
  return { cert, key };
}

function caBundle(flag: string, file: string): Buffer {
  const pem = readPem(flag, file);
  parseCert(flag, file, pem);
  return pem;
}

/**
 * Server credentials for listen: plaintext on a unix socket, mutual TLS on TCP. Refuses (InvalidArgument)
 * a TCP address without all three files, TLS files on a unix socket, and unreadable, mismatched or expired ones.
 */
export function serverCredentials(listen: string, files: ServerTlsFiles, now = new Date()): grpc.ServerCredentials {
  const given = (['cert', 'key', 'clientCa'] as const).filter((k) => files[k]);
  const flag = { cert: '--tls-cert', key: '--tls-key', clientCa: '--client-ca' } as const;
  if (unixPath(listen)) {
    if (given.length > 0) {
      throw new AgentError('InvalidArgument', `${given.map((k) => flag[k]).join(', ')}: TLS applies to a TCP --listen only; the unix socket ${listen} is guarded by its mode (0660) and --socket-group`);
    }
    return grpc.ServerCredentials.createInsecure();
  }
  if (given.length < 3) {
    const missing = (['cert', 'key', 'clientCa'] as const).filter((k) => !files[k]).map((k) => flag[k]);
    throw new AgentError(
      'InvalidArgument',
      `--listen ${listen} is TCP, which is served with mutual TLS only: give --tls-cert, --tls-key and --client-ca (missing: ${missing.join(', ')}); or listen on a unix socket`,
    );
  }
  const pair = keyPair(['--tls-cert', '--tls-key'], [files.cert!, files.key!], now);
  return grpc.ServerCredentials.createSsl(caBundle('--client-ca', files.clientCa!), [{ cert_chain: pair.cert, private_key: pair.key }], true);
}

/** Channel credentials and options for target: plaintext to a unix socket, mutual TLS to TCP (all three files required). */
export function clientCredentials(target: string, files: ClientTlsFiles, now = new Date()): { credentials: grpc.ChannelCredentials; options: grpc.ChannelOptions } {
  if (unixPath(target)) return { credentials: grpc.credentials.createInsecure(), options: {} };
  const missing = (['ca', 'cert', 'key'] as const).filter((k) => !files[k]);
  if (missing.length > 0) {
    throw new AgentError(
      'InvalidArgument',
      `the agent at ${target} is reached over TCP, which needs mutual TLS: give --ca, --cert and --key (or INPLACECTL_CA, INPLACECTL_CERT, INPLACECTL_KEY); missing: ${missing.map((k) => `--${k}`).join(', ')}`,
    );
  }
  const pair = keyPair(['--cert', '--key'], [files.cert!, files.key!], now);
  const credentials = grpc.credentials.createSsl(caBundle('--ca', files.ca!), pair.key, pair.cert);
  const options: grpc.ChannelOptions = files.serverName ? { 'grpc.ssl_target_name_override': files.serverName, 'grpc.default_authority': files.serverName } : {};
  return { credentials, options };
}
