// The daemon as an operator runs it: runtime detection failures, the API socket's mode, the gRPC health
// service, Prometheus metrics and probes, and a clean exit on SIGTERM.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { protoPath as healthProto } from 'grpc-health-check';
import { AgentClient } from '../../src/api/client.js';
import { AgentError } from '../../src/errors.js';
import { sandboxEnv } from '../testbed/sandbox-env.js';
import { CriRuntime } from '../../src/runtime/cri/cri-runtime.js';
import { startAgent, type AgentProcess } from '../support/agent-process.js';
import { requireRuntime } from '../support/require-runtime.js';
import { runDaemon } from '../support/run-daemon.js';
import { freePort } from '../support/registry-server.js';

const env = sandboxEnv();

describe('inplace-agent daemon', function () {
  this.timeout(60_000);

  it('refuses to start when no runtime answers, naming the socket it tried', async () => {
    const res = await runDaemon(['--runtime', 'cri', '--cri-endpoint', 'unix:///tmp/no-such-runtime.sock', '--listen', 'unix:///tmp/inplace-never.sock']);
    assert.equal(res.code, 1);
    assert.match(res.output, /cannot start: no container runtime answered; tried: unix:\/\/\/tmp\/no-such-runtime\.sock/);
  });

  it('refuses an unknown --socket-group by name', async () => {
    const res = await runDaemon(['--runtime', 'cri', '--cri-endpoint', env.criEndpoint, '--listen', 'unix:///tmp/inplace-group.sock', '--socket-group', 'no-such-group-xyz']);
    assert.equal(res.code, 1);
    assert.match(res.output, /--socket-group: no group "no-such-group-xyz" in \/etc\/group/);
  });

  it('refuses bad flags with a message naming them, as bad usage (exit 2)', async () => {
    const res = await runDaemon(['--min-free-disk', 'lots']);
    assert.equal(res.code, 2);
    assert.match(res.output, /inplace-agent: --min-free-disk: invalid size "lots"/);
  });

  describe('serving', () => {
    let agent: AgentProcess;
    let metricsPort: number;

    before(async function () {
      const rt = new CriRuntime(env.criEndpoint);
      try {
        await requireRuntime(this, 'cri', () => rt.version());
      } finally {
        rt.close();
      }
      metricsPort = await freePort();
      agent = await startAgent(['--runtime', 'cri', '--cri-endpoint', env.criEndpoint, '--metrics-addr', `127.0.0.1:${metricsPort}`]);
    });

    after(async () => {
      await agent?.stop();
    });

    it('creates its socket with mode 0660', () => {
      assert.equal(fs.statSync(agent.socket).mode & 0o777, 0o660);
    });

    it('gives the socket to --socket-group, so its members may use the agent', async () => {
      const grouped = await startAgent(['--runtime', 'cri', '--cri-endpoint', env.criEndpoint, '--socket-group', '4321']);
      try {
        const st = fs.statSync(grouped.socket);
        assert.equal(st.gid, 4321);
        assert.equal(st.mode & 0o777, 0o660);
      } finally {
        await grouped.stop();
      }
    });

    it('answers the standard gRPC health service for the agent service', async () => {
      const def = protoLoader.loadSync(healthProto, { keepCase: true, longs: String, enums: String, defaults: true });
      const pkg = grpc.loadPackageDefinition(def) as unknown as { grpc: { health: { v1: { Health: grpc.ServiceClientConstructor } } } };
      const client = new pkg.grpc.health.v1.Health(`unix://${agent.socket}`, grpc.credentials.createInsecure());
      try {
        const res = await new Promise<{ status: string }>((resolve, reject) =>
          client.Check({ service: 'inplace.v1.Agent' }, (err: Error | null, r: { status: string }) => (err ? reject(err) : resolve(r))),
        );
        assert.equal(res.status, 'SERVING');
      } finally {
        client.close();
      }
    });

    it('serves Prometheus metrics and liveness/readiness probes', async () => {
      const base = `http://127.0.0.1:${metricsPort}`;
      const metrics = await (await fetch(`${base}/metrics`)).text();
      for (const name of ['inplace_operations_active', 'inplace_image_pulls_in_progress', 'inplace_image_pull_queue_length', 'process_resident_memory_bytes']) {
        assert.match(metrics, new RegExp(`^${name} `, 'm'), `${name} exported`);
      }
      assert.equal((await fetch(`${base}/healthz`)).status, 200);
      assert.equal((await fetch(`${base}/readyz`)).status, 200);
    });

    it('ends server streams with the error status instead of hanging', async () => {
      const c = new AgentClient(`unix://${agent.socket}`);
      try {
        await assert.rejects(
          (async () => {
            for await (const _ of c.watchOperation('no-such-operation')) void _;
          })(),
          (e: unknown) => e instanceof AgentError && e.kind === 'NotFound' && /operation "no-such-operation" not found/.test(e.message),
        );
        await assert.rejects(
          (async () => {
            for await (const _ of c.pullImages({ images: [env.images.busybox], authConfigJson: '{not json' })) void _;
          })(),
          (e: unknown) => e instanceof AgentError && e.kind === 'InvalidArgument',
        );
      } finally {
        c.close();
      }
    });

    it('exits 0 on SIGTERM', async () => {
      agent.child.kill('SIGTERM');
      assert.deepEqual(await agent.exited, { code: 0, signal: null });
      assert.match(agent.log(), /stopped/);
    });
  });
});
