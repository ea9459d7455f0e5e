// A running agent whose containerd restarts: once containerd answers again, so does the agent, within a
// second (grpc-js's default reconnect back-off kept it answering UNAVAILABLE for up to ~10 s). containerd is
// stopped for 6 s, long enough for the default back-off to grow past several seconds.
import assert from 'node:assert/strict';
import { AgentClient } from '../../src/api/client.js';
import { AgentError } from '../../src/errors.js';
import { CriRuntime } from '../../src/runtime/cri/cri-runtime.js';
import { startAgent, type AgentProcess } from '../support/agent-process.js';
import { criAnswers, stopContainerd } from '../support/containerd-process.js';
import { requireRuntime } from '../support/require-runtime.js';
import { criTargets } from '../support/runtime-matrix.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls fn every 50 ms until it resolves true; the time it first did, or undefined after timeoutMs. */
async function firstTrue(fn: () => Promise<boolean>, timeoutMs: number): Promise<number | undefined> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await fn()) return Date.now();
    await sleep(50);
  }
  return undefined;
}

for (const target of criTargets()) {
  describe(`the agent reconnects to a restarted ${target.title}`, function () {
    this.timeout(90_000);
    const env = target.env;
    let agent: AgentProcess;
    let client: AgentClient;

    before(async function () {
      const rt = new CriRuntime(env.criEndpoint);
      try {
        await requireRuntime(this, target.title, () => rt.version());
      } finally {
        rt.close();
      }
      agent = await startAgent(['--runtime', 'cri', '--cri-endpoint', env.criEndpoint]);
      client = new AgentClient(`unix://${agent.socket}`, 2000);
    });

    after(async () => {
      client?.close();
      await agent?.stop();
    });

    it('answers within a second of containerd answering again', async () => {
      await client.listPods();
      const start = await stopContainerd(env);
      let failures = 0;
      try {
        for (const until = Date.now() + 6000; Date.now() < until; await sleep(100)) {
          try {
            await client.listPods();
          } catch (err) {
            assert.ok(AgentError.is(err, 'Unavailable'), `while containerd is down: ${String(err)}`);
            failures++;
          }
        }
      } finally {
        start();
      }
      assert.ok(failures > 0, 'the agent said the runtime was unavailable while it was down');
      const agentAnswers = async () => {
        try {
          await client.listPods();
          return true;
        } catch {
          return false;
        }
      };
      const [runtimeBack, agentBack] = await Promise.all([firstTrue(() => criAnswers(env.criEndpoint), 30_000), firstTrue(agentAnswers, 30_000)]);
      assert.ok(runtimeBack, 'containerd answers again');
      assert.ok(agentBack, `the agent answers again:\n${agent.log().slice(-2000)}`);
      assert.ok(agentBack - runtimeBack < 1000, `the agent answered ${agentBack - runtimeBack} ms after containerd did`);
    });
  });
}
