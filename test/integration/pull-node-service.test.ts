// The daemon's progress source wiring against the sandboxes: on containerd's CRI (1.6 and 2.x) it finds
// containerd's API on the CRI socket for byte progress, and a pull through the service with it is Done; on
// Docker, whose pulls report progress themselves, it picks none.
import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import { progressSourceFor } from '../../src/daemon/runtime-factories.js';
import { ImagePullService } from '../../src/pull/pull-service.js';
import { CriRuntime } from '../../src/runtime/cri/cri-runtime.js';
import { DockerRuntime } from '../../src/runtime/docker/docker-runtime.js';
import { sandboxEnv } from '../testbed/sandbox-env.js';
import { requireRuntime } from '../support/require-runtime.js';
import { criTargets } from '../support/runtime-matrix.js';

for (const target of criTargets()) {
  const env = target.env;
  describe(`progressSourceFor on ${target.title}`, () => {
    it('reads byte progress from containerd on its CRI socket', async function () {
      const rt = new CriRuntime(env.criEndpoint);
      try {
        await requireRuntime(this, target.title, () => rt.version());
        const progress = await progressSourceFor(rt);
        assert.equal(progress.from, env.criEndpoint);
        assert.ok(progress.source, 'a progress source');
        const service = new ImagePullService({ runtime: rt, progressSource: progress.source, metricsRegistry: new Registry() });
        try {
          const [e] = await service.pull({ images: [env.images.busybox] }, () => undefined);
          assert.equal(e.phase, 'Done', e.error);
        } finally {
          service.stop();
          progress.source?.close();
        }
      } finally {
        rt.close();
      }
    });
  });
}

describe('progressSourceFor on docker', () => {
  const env = sandboxEnv();
  it('needs no progress source on Docker', async function () {
    const rt = new DockerRuntime(env.dockerHost);
    try {
      await requireRuntime(this, 'dockerd of the sandbox', () => rt.version());
      const progress = await progressSourceFor(rt);
      assert.equal(progress.from, '');
      assert.equal(progress.source, undefined);
    } finally {
      rt.close();
    }
  });
});
