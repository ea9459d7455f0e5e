// The start the cluster tests of stock workloads rolled out in place share (rollout-deployment,
// rollout-deployment-failure, rollout-statefulset-rolling): the agents of deploy/ on every node (the hold among deploy/), a namespace of the
// test's own, kubectl on it, the pods of an app, a rollout object as a user writes it, and the most pods unready
// at once as a watch sees them.
import { execFile } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { AppsV1Api, CoreV1Api, CustomObjectsApi, Watch, type KubeConfig, type V1Deployment, type V1Pod, type V1PodTemplateSpec, type V1ReplicaSet } from '@kubernetes/client-node';
import { CR_GROUP, CR_PLURAL, CR_VERSION, type ContainerRestart } from '../../src/controllers/container-restart/types.js';
import { IPR_GROUP, IPR_PLURAL, IPR_VERSION, type InPlaceRollout, type InPlaceRolloutSpec } from '../../src/controllers/rollout/types.js';
import { READY_CONDITION } from '../../src/kube/ready-condition.js';
import { kubeEnv } from '../testbed/kube-env.js';
import { createNamespace } from './kube-cluster.js';
import { until } from './kube-users.js';
import { TRAP_TERM_APP } from './kube-web-pod.js';
import { requireRuntime } from './require-runtime.js';
import { agentOnEveryNode, AGENT_NS } from './rollout-wait.js';

const run = promisify(execFile);
const CTL = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../src/cli/main.js');

/** What a suite works with: the APIs on the admin kubeconfig, its namespace, kubectl in it. */
export interface RolloutCluster {
  apps: AppsV1Api;
  core: CoreV1Api;
  custom: CustomObjectsApi;
  ns: string;
  /** kubectl in the namespace; resolves to its stdout, rejects on a non-zero exit. */
  kubectl(...args: string[]): Promise<string>;
  /** inplacectl on the cluster: its exit code and output (never rejects). */
  inplacectl(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }>;
  /** The pods of app that are not being deleted. */
  pods(app: string): Promise<V1Pod[]>;
  /** Creates InPlaceRollout `name` for the workload as a user would: the target, no pre-warm, and `more` of the spec. */
  createRollout(name: string, kind: 'Deployment' | 'StatefulSet' | 'DaemonSet', target?: string, more?: Partial<InPlaceRolloutSpec>): Promise<void>;
  /** Creates Deployment `app` of `replicas` pods of `template`, selected by the label app=`app`. */
  createDeployment(app: string, replicas: number, template: V1PodTemplateSpec): Promise<V1Deployment>;
  /** The ContainerRestarts of the namespace (the pod updates the rollouts started). */
  restarts(): Promise<ContainerRestart[]>;
  /** The ReplicaSets of app (the label app=`app`). */
  replicaSets(app: string): Promise<V1ReplicaSet[]>;
  /** The rollout as the API server has it. */
  rollout(name: string): Promise<InPlaceRollout>;
}

/** For a mocha `before` hook: the agents Ready on every node (or the suite skipped), and a new namespace `prefix-...`. */
export async function rolloutCluster(ctx: Mocha.Context, kc: KubeConfig, prefix: string): Promise<RolloutCluster> {
  const env = kubeEnv();
  await requireRuntime(ctx, `the agent's DaemonSet ${AGENT_NS}/inplace-agent Ready on every node, with deploy/workload-hold-policy.yaml (scripts/kube-deploy-agent)`, async () => {
    kc.loadFromFile(env.kubeconfig);
    await agentOnEveryNode(kc);
  });
  const ns = await createNamespace(kc, prefix);
  const core = kc.makeApiClient(CoreV1Api);
  const custom = kc.makeApiClient(CustomObjectsApi);
  const apps = kc.makeApiClient(AppsV1Api);
  return {
    apps,
    core,
    custom,
    ns,
    kubectl: async (...args) => (await run(path.join(env.binDir, 'kubectl'), ['--kubeconfig', env.kubeconfig, '-n', ns, ...args])).stdout,
    inplacectl: (...args) =>
      run(process.execPath, [CTL, '--kubeconfig', env.kubeconfig, ...args]).then(
        (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
        (e: { code?: number; stdout?: string; stderr?: string }) => ({ code: e.code ?? -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' }),
      ),
    pods: async (app) => (await core.listNamespacedPod({ namespace: ns, labelSelector: `app=${app}` })).items.filter((p) => !p.metadata?.deletionTimestamp),
    createRollout: async (name, kind, target = name, more = {}) => {
      await custom.createNamespacedCustomObject({
        group: IPR_GROUP,
        version: IPR_VERSION,
        plural: IPR_PLURAL,
        namespace: ns,
        body: { apiVersion: `${IPR_GROUP}/${IPR_VERSION}`, kind: 'InPlaceRollout', metadata: { name }, spec: { targetRef: { apiVersion: 'apps/v1', kind, name: target }, prewarm: false, ...more } },
      });
    },
    createDeployment: (app, replicas, template) =>
      apps.createNamespacedDeployment({ namespace: ns, body: { metadata: { name: app }, spec: { replicas, selector: { matchLabels: { app } }, template } } }),
    restarts: async () => ((await custom.listNamespacedCustomObject({ group: CR_GROUP, version: CR_VERSION, plural: CR_PLURAL, namespace: ns })) as { items: ContainerRestart[] }).items,
    replicaSets: async (app) => (await apps.listNamespacedReplicaSet({ namespace: ns, labelSelector: `app=${app}` })).items,
    rollout: async (name) => (await custom.getNamespacedCustomObject({ group: IPR_GROUP, version: IPR_VERSION, plural: IPR_PLURAL, namespace: ns, name })) as InPlaceRollout,
  };
}

/** A pod template of app, gated by the agent's condition (it drains through it), one container `app` on `image` (the app v1 image). */
export function gatedTemplate(app: string, image = kubeEnv().sandbox.images.appV1): V1PodTemplateSpec {
  return {
    metadata: { labels: { app } },
    spec: { terminationGracePeriodSeconds: 5, readinessGates: [{ conditionType: READY_CONDITION }], containers: [{ name: 'app', image, args: ['sh', '-c', TRAP_TERM_APP] }] },
  };
}

/** The rollout's round after a release (its message no longer saying "released"): Succeeded. */
export async function rolloutAtRest(c: RolloutCluster, name: string, ms = 60_000): Promise<InPlaceRollout> {
  let last = '';
  return until(`rollout ${name} Succeeded after the release`, ms, async () => {
    const r = await c.rollout(name);
    last = JSON.stringify(r.status);
    return r.status?.phase === 'Succeeded' && !/released/.test(r.status.message ?? '') ? r : undefined;
  }, () => last);
}

const isReady = (p: V1Pod) => !p.metadata?.deletionTimestamp && (p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false);

/** Follows the pods of app from now on: the most of them unready (or missing from `expected`) at once. */
export async function sampleUnready(kc: KubeConfig, ns: string, app: string, expected: () => number): Promise<{ max(): number; stop(): void }> {
  // The pods as they are now, then every change after that list (a watch without a resourceVersion would begin
  // with one ADDED per pod, the first of them looking like the others missing).
  const list = await kc.makeApiClient(CoreV1Api).listNamespacedPod({ namespace: ns, labelSelector: `app=${app}` });
  const ready = new Map(list.items.map((p) => [p.metadata?.name ?? '', isReady(p)]));
  let max = 0;
  const req = await new Watch(kc).watch(`/api/v1/namespaces/${ns}/pods`, { labelSelector: `app=${app}`, resourceVersion: list.metadata?.resourceVersion }, (type, p: V1Pod) => {
    const n = p.metadata?.name ?? '';
    if (type === 'DELETED') ready.delete(n);
    else ready.set(n, isReady(p));
    max = Math.max(max, [...ready.values()].filter((r) => !r).length + Math.max(0, expected() - ready.size));
  }, () => undefined);
  return { max: () => max, stop: () => req.abort() };
}

/** Follows rollout `name` from now on: every Progressing reason and message its status took, in order. */
export async function watchRolloutStatus(kc: KubeConfig, ns: string, name: string): Promise<{ seen: { reason: string; message: string }[]; stop(): void }> {
  const seen: { reason: string; message: string }[] = [];
  const req = await new Watch(kc).watch(`/apis/${IPR_GROUP}/${IPR_VERSION}/namespaces/${ns}/${IPR_PLURAL}`, { fieldSelector: `metadata.name=${name}` }, (_type, r: InPlaceRollout) => {
    const c = r.status?.conditions?.find((x) => x.type === 'Progressing');
    if (c && (seen.at(-1)?.message !== c.message || seen.at(-1)?.reason !== c.reason)) seen.push({ reason: c.reason ?? '', message: c.message ?? '' });
  }, () => undefined);
  return { seen, stop: () => req.abort() };
}
