// Registry credentials stay on the registry they were given for (issue 28, finding 12). containerd 2.x reads a
// registry's hosts.toml at each pull, so the test gives a basic-auth registry a mirror: a recording server that
// asks every caller for basic auth, then answers 404 to whoever sends some. Without serverAddress in the CRI
// AuthConfig containerd hands the credentials to any host that asks, the mirror included; with it, only to the
// registry's own host. (containerd 1.6 configures mirrors in its main config file only, read at start, so the
// shared 1.6 sandbox cannot be given a mirror for one test.)
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { lookupAuth, parseAuthConfig } from '../../src/pull/auth.js';
import { CriClient } from '../../src/runtime/cri/client.js';
import { CriRuntime } from '../../src/runtime/cri/cri-runtime.js';
import { buildImage, buildLayer, pushImage } from '../support/registry-images.js';
import { startRegistry, type RegistryServer } from '../support/registry-server.js';
import { requireRuntime } from '../support/require-runtime.js';
import { criTargets } from '../support/runtime-matrix.js';

describe('registry credentials scoped to their registry (containerd 2.x, a mirror that asks for them)', function () {
  this.timeout(60_000);
  const target = criTargets().find((t) => t.major === 2)!;
  const run = randomBytes(4).toString('hex');
  const password = `pw-${run}`;
  const rt = new CriRuntime(target.env.criEndpoint);
  let registry: RegistryServer | undefined;
  let mirror: http.Server | undefined;
  let hostsDir = '';
  /** The Authorization header of every request the mirror got ('' when none). */
  const seen: string[] = [];

  before(async function () {
    await requireRuntime(this, target.title, () => rt.version());
    registry = await startRegistry({ basicAuth: { username: 'owner', password } });
    const image = buildImage([buildLayer([{ path: `etc/scope-${run}`, data: Buffer.from(run) }])], `scope-${run}`);
    await pushImage({ registry: registry.host, basicAuth: `owner:${password}` }, 'scope/app', run, image);
    mirror = http.createServer((req, res) => {
      const auth = req.headers.authorization ?? '';
      seen.push(auth);
      if (!auth) res.writeHead(401, { 'WWW-Authenticate': 'Basic realm="mirror"', 'Docker-Distribution-API-Version': 'registry/2.0' });
      else res.writeHead(404);
      res.end();
    });
    await new Promise<void>((r) => mirror!.listen(0, '127.0.0.1', r));
    const mirrorHost = `127.0.0.1:${(mirror.address() as AddressInfo).port}`;
    hostsDir = path.join(target.env.dir, 'certs.d', registry.host);
    mkdirSync(hostsDir, { recursive: true });
    writeFileSync(
      path.join(hostsDir, 'hosts.toml'),
      [`server = "http://${registry.host}"`, '', `[host."http://${mirrorHost}"]`, '  capabilities = ["pull", "resolve"]', ''].join('\n'),
    );
  });

  after(async () => {
    if (hostsDir) rmSync(hostsDir, { recursive: true, force: true });
    if (registry) {
      const client = new CriClient(target.env.criEndpoint);
      await client.removeImage(`${registry.host}/scope/app:${run}`).catch(() => undefined);
      client.close();
    }
    await registry?.stop();
    await new Promise<void>((r) => (mirror ? mirror.close(() => r()) : r()));
    rt.close();
  });

  it('the mirror is asked first and gets no credentials; the registry gets them and the pull succeeds', async () => {
    const ref = `${registry!.host}/scope/app:${run}`;
    const keyring = parseAuthConfig({ auths: { [registry!.host]: { username: 'owner', password } } });
    const auth = lookupAuth(keyring, ref);
    const pulled = await rt.pullImage(ref, { auth });
    assert.match(pulled.id, /^sha256:/);
    assert.ok(seen.length > 0, 'containerd asked the mirror first');
    const leaked = seen.filter((a) => a !== '');
    assert.deepEqual(leaked, [], 'the mirror got no Authorization header');
    assert.equal(auth?.serverAddress, `https://${registry!.host}`);
  });
});
