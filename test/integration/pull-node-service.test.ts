// createNodePullService against the sandbox: on containerd's CRI it finds containerd's API on the CRI socket
// for byte progress; on Docker it needs none.
import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import { createNodePullService } from '../../src/pull/node-pull-service.js';
import { CriRuntime } from '../../src/runtime/cri/cri-runtime.js';
import { DockerRuntime } from '../../src/runtime/docker/docker-runtime.js';
import { sandboxEnv } from '../../src/testbed/sandbox-env.js';
import { requireRuntime } from '../support/require-runtime.js';

const env = sandboxEnv();

describe('createNodePullService (real runtimes)', () => {
  it('reads byte progress from containerd on its CRI socket', async function () {
    const rt = new CriRuntime(env.criEndpoint);
    try {
      await requireRuntime(this, 'containerd CRI of the sandbox', () => rt.version());
      const node = await createNodePullService({ runtime: rt, metricsRegistry: new Registry() });
      assert.equal(node.progressFrom, env.criEndpoint);
      const [e] = await node.service.pull({ images: [env.images.busybox] }, () => undefined);
      assert.equal(e.phase, 'Done', e.error);
      node.close();
    } finally {
      rt.close();
    }
  });

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
