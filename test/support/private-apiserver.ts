// A private etcd + kube-apiserver pair on loopback, started by a test that must restart the API server (the
// shared cluster's is never restarted). Binaries from `scripts/build-deps path kubernetes`; certificates and a
// static admin token made here with openssl.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { buildDepsDir } from './build-deps.js';
import { freePort } from './registry-server.js';


/** The Kubernetes bin directory (kube-apiserver, etcd, kubectl), or undefined when not built. */
export function kubeBinDir(): string | undefined {
  if (process.env.INPLACE_KUBE_BIN_DIR) return process.env.INPLACE_KUBE_BIN_DIR;
  return buildDepsDir('kubernetes');
}


function openssl(dir: string, ...args: string[]): void {
  execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
}

/** A running private control plane. */
export interface PrivateApiServer {
  dir: string;
  kubeconfig: string;
  server: string;
  /** Stops kube-apiserver (SIGTERM, then waits): etcd and its data stay. */
  stopApiServer(): Promise<void>;
  /** Starts kube-apiserver again on the same port and waits until it is ready. */
  startApiServer(): Promise<void>;
  /** Stops everything and removes the directory. */
  stop(): Promise<void>;
}

function run(bin: string, args: string[], log: string): ChildProcess {
  const out = fs.openSync(log, 'a');
  return spawn(bin, args, { stdio: ['ignore', out, out] });
}

async function stopChild(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  child.kill('SIGTERM');
  const force = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(force);
}

async function waitReady(url: string, ca: string, token: string, child: ChildProcess, log: string, timeoutMs: number): Promise<void> {
  const { default: https } = await import('node:https');
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`kube-apiserver exited (${child.exitCode}):\n${fs.readFileSync(log, 'utf8').slice(-3000)}`);
    const ok = await new Promise<boolean>((resolve) => {
      const req = https.get(`${url}/readyz`, { ca: fs.readFileSync(ca), headers: { Authorization: `Bearer ${token}` }, timeout: 2000 }, (res) => {
        res.resume();
        resolve(res.statusCode === 200);
      });
      req.on('error', () => resolve(false));
      req.on('timeout', () => req.destroy());
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`kube-apiserver not ready in ${timeoutMs} ms:\n${fs.readFileSync(log, 'utf8').slice(-3000)}`);
    await new Promise((r) => setTimeout(r, 300));
  }
}

/** Starts etcd and kube-apiserver in a fresh directory under /tmp (prefix kcrd-apiserver-). */
export async function startPrivateApiServer(bin: string): Promise<PrivateApiServer> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kcrd-apiserver-'));
  openssl(dir, 'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '2', '-subj', '/CN=kcrd-test-ca');
  openssl(dir, 'req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=kube-apiserver');
  fs.writeFileSync(path.join(dir, 'san.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes.default.svc\n');
  openssl(dir, 'x509', '-req', '-in', 'server.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'server.crt', '-days', '2', '-extfile', 'san.ext');
  openssl(dir, 'genrsa', '-out', 'sa.key', '2048');
  const token = `kcrd-${Math.random().toString(36).slice(2)}${Math.random().toString(36).slice(2)}`;
  fs.writeFileSync(path.join(dir, 'tokens.csv'), `${token},admin,admin-uid,"system:masters"\n`);
  const [etcdPort, peerPort, apiPort] = [await freePort(), await freePort(), await freePort()];
  const etcdUrl = `http://127.0.0.1:${etcdPort}`;
  const peerUrl = `http://127.0.0.1:${peerPort}`;
  const etcd = run(
    path.join(bin, 'etcd'),
    ['--name', 'kcrd', '--data-dir', path.join(dir, 'etcd'), '--listen-client-urls', etcdUrl, '--advertise-client-urls', etcdUrl, '--listen-peer-urls', peerUrl, '--initial-advertise-peer-urls', peerUrl, '--initial-cluster', `kcrd=${peerUrl}`, '--unsafe-no-fsync'],
    path.join(dir, 'etcd.log'),
  );
  const server = `https://127.0.0.1:${apiPort}`;
  const apiLog = path.join(dir, 'apiserver.log');
  const apiArgs = [
    '--etcd-servers', etcdUrl,
    '--bind-address', '127.0.0.1',
    '--secure-port', String(apiPort),
    '--advertise-address', '127.0.0.1',
    '--endpoint-reconciler-type', 'none',
    '--tls-cert-file', path.join(dir, 'server.crt'),
    '--tls-private-key-file', path.join(dir, 'server.key'),
    '--client-ca-file', path.join(dir, 'ca.crt'),
    '--service-account-key-file', path.join(dir, 'sa.key'),
    '--service-account-signing-key-file', path.join(dir, 'sa.key'),
    '--service-account-issuer', 'https://kubernetes.default.svc',
    '--service-cluster-ip-range', '10.0.0.0/24',
    '--token-auth-file', path.join(dir, 'tokens.csv'),
    '--authorization-mode', 'RBAC',
    '--cert-dir', path.join(dir, 'certs'),
  ];
  let api: ChildProcess | undefined;
  const startApiServer = async () => {
    api = run(path.join(bin, 'kube-apiserver'), apiArgs, apiLog);
    await waitReady(server, path.join(dir, 'ca.crt'), token, api, apiLog, 90_000);
  };
  try {
    await startApiServer();
  } catch (err) {
    await stopChild(api);
    await stopChild(etcd);
    throw err;
  }
  const kubeconfig = path.join(dir, 'kubeconfig');
  fs.writeFileSync(
    kubeconfig,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'kcrd', cluster: { server, 'certificate-authority': path.join(dir, 'ca.crt') } }],
      users: [{ name: 'admin', user: { token } }],
      contexts: [{ name: 'kcrd', context: { cluster: 'kcrd', user: 'admin' } }],
      'current-context': 'kcrd',
    }),
  );
  return {
    dir,
    kubeconfig,
    server,
    stopApiServer: () => stopChild(api),
    startApiServer,
    stop: async () => {
      await stopChild(api);
      await stopChild(etcd);
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
