// containerd's own words for failed pulls, captured live from containerd 1.6 and 2.x against real registries
// (a plain one, one that requires basic auth, a port nothing listens on): each answer must match the row of
// src/runtime/cri/pull-messages.ts that this version is known to send, and the adapter and the pull service
// must give its kind. A containerd release that words a case differently fails here, not in production.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Registry } from 'prom-client';
import { AgentError, type ErrorKind } from '../../src/errors.js';
import { ImagePullService } from '../../src/pull/pull-service.js';
import { CriClient } from '../../src/runtime/cri/client.js';
import { CriRuntime } from '../../src/runtime/cri/cri-runtime.js';
import { matchPullMessage } from '../../src/runtime/cri/pull-messages.js';
import type { RegistryAuth } from '../../src/runtime/types.js';
import { buildImage, buildLayer, pushImage } from '../support/registry-images.js';
import { startRegistry, type RegistryServer } from '../support/registry-server.js';
import { requireRuntime } from '../support/require-runtime.js';
import { criTargets } from '../support/runtime-matrix.js';

interface Case {
  name: string;
  ref: () => string;
  auth?: RegistryAuth;
  /** The table row each major is known to answer with. */
  row: Record<1 | 2, string>;
  kind: ErrorKind;
}

describe('failed pulls as containerd words them (pull-messages table)', function () {
  this.timeout(60_000);
  const run = randomBytes(4).toString('hex');
  let open: RegistryServer | undefined;
  let locked: RegistryServer | undefined;
  const password = `pw-${run}`;

  before(async () => {
    open = await startRegistry();
    locked = await startRegistry({ basicAuth: { username: 'puller', password } });
    const image = buildImage([buildLayer([{ path: `etc/${run}`, data: Buffer.from(run) }])], `errors-${run}`);
    await pushImage({ registry: open.host }, 'err/app', 'v1', image);
    await pushImage({ registry: locked.host, basicAuth: `puller:${password}` }, 'err/private', 'v1', image);
    // An image whose layer the registry has lost.
    const broken = buildImage([buildLayer([{ path: `etc/broken-${run}`, data: Buffer.from(run) }])], `broken-${run}`);
    await pushImage({ registry: open.host }, 'err/broken', 'v1', broken);
    const del = await fetch(`http://${open.host}/v2/err/broken/blobs/${broken.layers[0].digest}`, { method: 'DELETE' });
    assert.equal(del.status, 202, 'the test registry deletes the layer');
  });

  after(async () => {
    await open?.stop();
    await locked?.stop();
  });

  const cases: Case[] = [
    { name: 'a missing tag', ref: () => `${open!.host}/err/app:nope`, row: { 1: 'missing-1.6', 2: 'missing-2.x' }, kind: 'NotFound' },
    { name: 'a missing repository', ref: () => `${open!.host}/err/none:v1`, row: { 1: 'missing-1.6', 2: 'missing-2.x' }, kind: 'NotFound' },
    { name: 'a missing digest', ref: () => `${open!.host}/err/app@sha256:${'0'.repeat(64)}`, row: { 1: 'missing-1.6', 2: 'missing-2.x' }, kind: 'NotFound' },
    { name: 'a layer the registry lost', ref: () => `${open!.host}/err/broken:v1`, row: { 1: 'missing-blob', 2: 'missing-blob' }, kind: 'NotFound' },
    { name: 'credentials needed, none given', ref: () => `${locked!.host}/err/private:v1`, row: { 1: 'auth-1.6', 2: 'auth-required-2.x' }, kind: 'Unauthenticated' },
    {
      name: 'credentials refused',
      ref: () => `${locked!.host}/err/private:v1`,
      auth: { username: 'puller', password: 'wrong' },
      row: { 1: 'auth-1.6', 2: 'auth-rejected-2.x' },
      kind: 'Unauthenticated',
    },
    { name: 'nothing listening at the registry', ref: () => '127.0.0.1:1/err/app:v1', row: { 1: 'registry-refused', 2: 'registry-refused' }, kind: 'Unavailable' },
  ];

  for (const target of criTargets()) {
    describe(target.title, () => {
      const client = new CriClient(target.env.criEndpoint);
      const rt = new CriRuntime(target.env.criEndpoint);

      before(async function () {
        await requireRuntime(this, target.title, () => rt.version());
      });

      after(() => {
        client.close();
        rt.close();
      });

      for (const c of cases) {
        it(`${c.name}: row ${c.row[target.major]}, ${c.kind}`, async () => {
          let err: unknown;
          try {
            await client.pullImage({ image: { image: c.ref() }, auth: c.auth ? { username: c.auth.username ?? '', password: c.auth.password ?? '' } : null });
          } catch (e) {
            err = e;
          }
          assert.ok(err instanceof AgentError, `the pull of ${c.ref()} should fail`);
          const said = (err.cause as { details?: string }).details ?? '';
          assert.equal(matchPullMessage(said)?.id, c.row[target.major], `containerd said: ${said}`);
          assert.equal(err.kind, c.kind, err.message);
        });
      }

      it('the pull service fails each at once where no retry can help, and retries only the unreachable registry', async () => {
        const svc = new ImagePullService({ runtime: rt, metricsRegistry: new Registry(), retries: 1, backoff: { initialMs: 10, maxMs: 10, jitter: 0 } });
        for (const c of cases) {
          const keyring = c.auth ? new Map([[c.ref().split('/')[0], c.auth]]) : undefined;
          const [e] = await svc.pull({ images: [c.ref()], keyring }, () => undefined);
          assert.equal(e.phase, 'Failed', c.name);
          assert.equal(e.errorKind, c.kind, `${c.name}: ${e.error}`);
          assert.equal(e.attempt, c.kind === 'Unavailable' ? 2 : 1, `${c.name}: attempts`);
        }
      });
    });
  }
});
