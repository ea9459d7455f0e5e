// createNodePullService against the sandboxes: on containerd's CRI (1.6 and 2.x) it finds containerd's API on
// the CRI socket for byte progress; on Docker it needs none.
import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import { createNodePullService } from '../../src/pull/node-pull-service.js';
import { CriRuntime } from '../../src/runtime/cri/cri-runtime.js';
import { DockerRuntime } from '../../src/runtime/docker/docker-runtime.js';
import { sandboxEnv } from '../testbed/sandbox-env.js';
import { requireRuntime } from '../support/require-runtime.js';
import { criTargets } from '../support/runtime-matrix.js';

for (const target of criTargets()) {
  const env = target.env;
  describe(`createNodePullService on ${target.title}`, () => {
    it('reads byte progress from containerd on its CRI socket', async function () {
      const rt = new CriRuntime(env.criEndpoint);
      try {
        await requireRuntime(this, target.title, () => rt.version());
        const node = await createNodePullService({ runtime: rt, metricsRegistry: new Registry() });
        assert.equal(node.progressFrom, env.criEndpoint);
        const [e] = await node.service.pull({ images: [env.images.busybox] }, () => undefined);
        assert.equal(e.phase, 'Done', e.error);
        node.close();
      } finally {
        rt.close();
      }
    });
  });
}

describe('createNodePullService on docker', () => {
  const env = sandboxEnv();
  it('needs no progress source on Docker', async function () {
    const rt = new DockerRuntime(env.dockerHost);
    try {
      await requireRuntime(this, 'dockerd of the sandbox', () => rt.version());
      const node = await createNodePullService({ runtime: rt, metricsRegistry: new Registry() });
      assert.equal(node.progressFrom, '');
      node.close();
    } finally {
      rt.close();
    }
  });
});
