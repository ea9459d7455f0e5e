// The coordinating side of the scale harness (issue 42): the agent's rollout coordinator, started by the daemon's
// own wiring (src/daemon/rollout-wiring.ts, startRollouts) with the daemon's default options, in a process of its
// own so that its RSS and CPU are its own. Its kubeconfig carries a token of the agent's ServiceAccount bound to an
// agent pod on the fake node `scale-coordinator` (run.ts makes both), so RBAC and the node-isolation policy of
// deploy/ judge it as they judge the elected agent of a real DaemonSet.
//
//   node dist/bench/scale/coordinator.js KUBECONFIG NODE STATE_DIR
// Prints `leading` once it holds the coordination Lease; SIGTERM gives the Lease back and exits.
import { mkdirSync } from 'node:fs';
import { systemClock } from '../../src/clock.js';
import { createLogger } from '../../src/log.js';
import { daemonCommand, daemonOptions } from '../../src/daemon/options.js';
import { agentIdentity } from '../../src/daemon/agent-identity.js';
import { kubeConfigFrom, limitRequests, startRollouts } from '../../src/daemon/kube-wiring.js';

const [file, node, stateDir] = process.argv.slice(2);
if (!file || !node || !stateDir) throw new Error('usage: coordinator.js KUBECONFIG NODE STATE_DIR');
mkdirSync(stateDir, { recursive: true });
const log = createLogger(process.env.SCALE_AGENT_LOG_LEVEL ?? 'warn');
const opts = daemonOptions(daemonCommand('0').exitOverride().parse(['--node-name', node, '--state-dir', stateDir, '--kubeconfig', file], { from: 'user' }));
const kc = limitRequests(kubeConfigFrom({ kind: 'file', file }), opts.kubeRequestTimeoutMs);
const agentId = await agentIdentity(stateDir);
const c = await startRollouts(kc, node, agentId, opts, systemClock, log);
if (!c) throw new Error('rollouts are turned off');
while (!c.leading()) await systemClock.sleep(100);
process.stdout.write('leading\n');
const stop = async () => {
  await c.stop();
  process.exit(0);
};
process.once('SIGTERM', () => void stop());
process.once('SIGINT', () => void stop());
