// The scale harness's cluster side (issue 42): the private control plane of scripts/scale-sandbox with KWOK nodes,
// the agent's install from deploy/ (without its DaemonSet), one agent pod a node for node-bound tokens, and the
// workload. Everything here talks to that private API server only.
import { execFile } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { AppsV1Api, CoreV1Api, KubeConfig, type V1Pod } from '@kubernetes/client-node';
import { READY_CONDITION } from '../../src/kube/ready-condition.js';

const exec = promisify(execFile);
const ROOT = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../../..');
/** The namespace of the agent (deploy/namespace.yaml) and of the workload. */
export const AGENT_NS = 'inplace-system';
export const NS = 'scale-bench';
/** The fake node the coordinator's agent pod runs on: no workload pod goes there (its `type` label differs). */
export const COORDINATOR_NODE = 'scale-coordinator';
export const APP = 'web';
/** The agent's install, in order, without deploy/daemonset.yaml (the agents here are bench/scale's processes). */
const DEPLOY = ['namespace.yaml', 'crds/containerrestart.yaml', 'crds/imageprewarm.yaml', 'crds/inplacerollout.yaml', 'crds/nodeprewarm.yaml', 'crds/sidecarset.yaml', 'serviceaccount.yaml', 'rbac.yaml', 'admission-policy.yaml', 'admission-requester.yaml', 'node-isolation-policy.yaml'];

/** The sandbox's settings, as `scripts/scale-sandbox env` prints them. */
export type SandboxEnv = Record<string, string>;

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Runs scripts/scale-sandbox with these arguments (at the lowest priority), its output to stderr. */
export async function sandbox(args: string[], env: NodeJS.ProcessEnv = {}): Promise<string> {
  const { stdout, stderr } = await exec('nice', ['-n', '19', path.join(ROOT, 'scripts/scale-sandbox'), ...args], { env: { ...process.env, ...env }, maxBuffer: 1 << 26 });
  if (stderr) process.stderr.write(stderr);
  return stdout;
}

/** The sandbox's environment (kubeconfig, pids, metrics addresses). */
export async function sandboxEnv(): Promise<SandboxEnv> {
  const out = await sandbox(['env']);
  return Object.fromEntries([...out.matchAll(/^export (\w+)=(.*)$/gm)].map((m) => [m[1], m[2]]));
}

/** kubectl against the sandbox. */
export async function kubectl(env: SandboxEnv, args: string[]): Promise<string> {
  const bin = (await exec(path.join(ROOT, 'scripts/build-deps'), ['path', 'kubernetes'])).stdout.trim();
  return (await exec(path.join(bin, 'kubectl'), ['--kubeconfig', env.KUBECONFIG, ...args], { maxBuffer: 1 << 28 })).stdout;
}

/** The agent's CRDs, RBAC and admission policies from deploy/. */
export async function installAgent(env: SandboxEnv): Promise<void> {
  for (const f of DEPLOY) await kubectl(env, ['apply', '--server-side', '-f', path.join(ROOT, 'deploy', f)]);
  await kubectl(env, ['wait', '--for', 'condition=Established', 'crd', '--all', '--timeout', '60s']);
}

/**
 * The fake node of the coordinator, and a DaemonSet of one pause pod a node (the agent's ServiceAccount, every node):
 * a token bound to a node's pod carries that node's name, as the real agent's does, so the node-isolation policy
 * of deploy/ judges each simulated agent as it would judge the agent on that node.
 */
export async function agentPods(kc: KubeConfig, nodes: number): Promise<V1Pod[]> {
  const core = kc.makeApiClient(CoreV1Api);
  await core.createNode({
    body: {
      metadata: { name: COORDINATOR_NODE, annotations: { 'kwok.x-k8s.io/node': 'fake', 'node.alpha.kubernetes.io/ttl': '0' }, labels: { type: 'kwok-coordinator', 'kubernetes.io/hostname': COORDINATOR_NODE } },
      status: { allocatable: { cpu: '32', memory: '256Gi', pods: '110' }, capacity: { cpu: '32', memory: '256Gi', pods: '110' } },
    },
  });
  const labels = { app: 'inplace-agent-sim' };
  await kc.makeApiClient(AppsV1Api).createNamespacedDaemonSet({
    namespace: AGENT_NS,
    body: {
      metadata: { name: 'inplace-agent-sim' },
      spec: {
        selector: { matchLabels: labels },
        template: { metadata: { labels }, spec: { serviceAccountName: 'inplace-agent', automountServiceAccountToken: false, tolerations: [{ operator: 'Exists' }], containers: [{ name: 'agent', image: 'registry.k8s.io/pause:3.10' }] } },
      },
    },
  });
  for (;;) {
    const pods = (await core.listNamespacedPod({ namespace: AGENT_NS, labelSelector: 'app=inplace-agent-sim' })).items;
    if (pods.filter((p) => p.status?.phase === 'Running').length >= nodes + 1) return pods;
    await sleep(1000);
  }
}

/** Writes DIR/NODE.kubeconfig for each agent pod: a token of the agent's ServiceAccount bound to that pod. */
export async function agentKubeconfigs(kc: KubeConfig, env: SandboxEnv, pods: V1Pod[], dir: string): Promise<Map<string, string>> {
  const core = kc.makeApiClient(CoreV1Api);
  mkdirSync(dir, { recursive: true });
  const server = kc.getCurrentCluster()!.server;
  const ca = path.join(env.INPLACE_SCALE_DIR, 'pki/ca.crt');
  const out = new Map<string, string>();
  for (let i = 0; i < pods.length; i += 50) {
    await Promise.all(
      pods.slice(i, i + 50).map(async (p) => {
        const node = p.spec!.nodeName!;
        const tr = await core.createNamespacedServiceAccountToken({
          name: 'inplace-agent',
          namespace: AGENT_NS,
          body: { spec: { audiences: ['https://kubernetes.default.svc'], expirationSeconds: 7200, boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: p.metadata!.name!, uid: p.metadata!.uid! } } },
        });
        const file = path.join(dir, `${node}.kubeconfig`);
        const cfg = {
          apiVersion: 'v1',
          kind: 'Config',
          clusters: [{ name: 'scale', cluster: { server, 'certificate-authority': ca } }],
          users: [{ name: 'agent', user: { token: tr.status!.token } }],
          contexts: [{ name: 'scale', context: { cluster: 'scale', user: 'agent', namespace: AGENT_NS } }],
          'current-context': 'scale',
        };
        writeFileSync(file, JSON.stringify(cfg));
        out.set(node, file);
      }),
    );
  }
  return out;
}

/** The workload's images: the app's, before and after the change, and its sidecar's (never pulled: simulated). */
export const IMAGES = { app: 'registry.example/scale/app:v1', appNext: 'registry.example/scale/app:v2', sidecar: 'registry.example/scale/sidecar:v1' };

/**
 * A StatefulSet of `replicas` pods (Parallel, OnDelete: the in-place rollout's kind), an app and a sidecar, with the
 * agent's readiness gate; each asks for 1/perNode of a fake node's 32 CPUs (3 for 10 a node), so the scheduler puts
 * at most perNode on each node.
 */
export async function createWorkload(kc: KubeConfig, replicas: number, perNode: number): Promise<void> {
  const cpu = `${Math.floor(32_000 / perNode)}m`;
  await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: NS } } });
  const labels = { app: APP };
  await kc.makeApiClient(AppsV1Api).createNamespacedStatefulSet({
    namespace: NS,
    body: {
      metadata: { name: APP },
      spec: {
        replicas,
        serviceName: APP,
        podManagementPolicy: 'Parallel',
        updateStrategy: { type: 'OnDelete' },
        selector: { matchLabels: labels },
        template: {
          metadata: { labels },
          spec: {
            nodeSelector: { type: 'kwok' },
            readinessGates: [{ conditionType: READY_CONDITION }],
            terminationGracePeriodSeconds: 5,
            containers: [
              { name: 'app', image: IMAGES.app, resources: { requests: { cpu } } },
              { name: 'sidecar', image: IMAGES.sidecar },
            ],
          },
        },
      },
    },
  });
}

/** Waits until `n` pods of the workload run with their container ids (kwok's Stages done). */
export async function waitWorkload(kc: KubeConfig, n: number, timeoutMs: number): Promise<void> {
  const core = kc.makeApiClient(CoreV1Api);
  const end = Date.now() + timeoutMs;
  for (;;) {
    const pods = (await core.listNamespacedPod({ namespace: NS })).items;
    const ok = pods.filter((p) => p.status?.phase === 'Running' && (p.status.containerStatuses ?? []).length === 2 && p.status.containerStatuses!.every((s) => s.containerID));
    if (ok.length >= n) return;
    if (Date.now() > end) throw new Error(`only ${ok.length} of ${n} pods running with container ids after ${timeoutMs / 1000} s`);
    await sleep(2000);
  }
}
