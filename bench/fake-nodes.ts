// The Node objects of a bench's simulated fleet (no kubelet behind them) on the shared test cluster. A DaemonSet
// that would select them makes its controller create one pod per fake node, each Pending for as long as the
// bench runs (the agent's DaemonSet tolerates every taint, so only a node label keeps it off: deploy/daemonset.yaml
// selects kubernetes.io/os=linux, which the kubelet sets and fake nodes lack). So: refuse to start while a
// DaemonSet would select them, and delete them however the bench ends.
import * as k8s from '@kubernetes/client-node';
import { selectorFor } from '../src/k8s/label-selector.js';

/** A DaemonSet's pod template placement rules, as far as a node's labels decide them. */
type Placement = Pick<k8s.V1PodSpec, 'nodeSelector' | 'affinity'>;

/** Whether a node with exactly these labels (no kubelet labels) satisfies one node selector requirement. */
function requirementHolds(r: k8s.V1NodeSelectorRequirement, labels: Record<string, string>): boolean {
  const v = labels[r.key];
  switch (r.operator) {
    case 'In':
      return v !== undefined && (r.values ?? []).includes(v);
    case 'NotIn':
      return v === undefined || !(r.values ?? []).includes(v);
    case 'Exists':
      return v !== undefined;
    case 'DoesNotExist':
      return v === undefined;
    default:
      // Gt, Lt: numeric label values; fake nodes carry none that parse, so they fail as the scheduler's do.
      return false;
  }
}

/** Whether the DaemonSet controller would place a pod of this template on a node with these labels (taints aside: fake nodes have none). */
export function selectsNode(p: Placement, labels: Record<string, string>): boolean {
  if (!Object.entries(p.nodeSelector ?? {}).every(([k, v]) => labels[k] === v)) return false;
  const terms = p.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms;
  if (!terms?.length) return true;
  // Terms are ORed; a term's expressions are ANDed. matchFields (metadata.name) is the DaemonSet's own pinning.
  return terms.some((t) => (t.matchExpressions ?? []).every((r) => requirementHolds(r, labels)));
}

/** The namespace/name of every DaemonSet in the cluster that would put a pod on a fake node with these labels. */
export async function daemonSetsSelecting(kc: k8s.KubeConfig, labels: Record<string, string>): Promise<string[]> {
  const list = await kc.makeApiClient(k8s.AppsV1Api).listDaemonSetForAllNamespaces();
  return list.items.filter((d) => selectsNode(d.spec?.template.spec ?? {}, labels)).map((d) => `${d.metadata?.namespace}/${d.metadata?.name}`);
}

/** Creates the named fake nodes (unschedulable, only `labels`), keeping ones that exist, and deletes other nodes left with these labels. */
export async function createFakeNodes(kc: k8s.KubeConfig, names: string[], labels: Record<string, string>): Promise<void> {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const existing = new Set((await core.listNode({ labelSelector: selectorFor(labels) })).items.map((n) => n.metadata?.name ?? ''));
  const wanted = new Set(names);
  // Left by an earlier, larger or killed run: they would be targeted by the same selector.
  await deleteFakeNodes(kc, [...existing].filter((n) => !wanted.has(n)));
  const todo = names.filter((n) => !existing.has(n));
  for (let i = 0; i < todo.length; i += 50) {
    await Promise.all(todo.slice(i, i + 50).map((name) => core.createNode({ body: { metadata: { name, labels }, spec: { unschedulable: true } } })));
  }
}

/** Deletes the named nodes (missing ones are fine). */
export async function deleteFakeNodes(kc: k8s.KubeConfig, names: string[]): Promise<void> {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  for (let i = 0; i < names.length; i += 100) await Promise.all(names.slice(i, i + 100).map((name) => core.deleteNode({ name }).catch(() => undefined)));
}

/**
 * Runs fn with the fake nodes in place, after checking no DaemonSet selects them; deletes them when fn ends,
 * throws, or the process is interrupted (SIGINT, SIGTERM).
 */
export async function withFakeNodes<T>(kc: k8s.KubeConfig, names: string[], labels: Record<string, string>, fn: () => Promise<T>): Promise<T> {
  const selecting = await daemonSetsSelecting(kc, labels);
  if (selecting.length > 0) {
    throw new Error(
      `DaemonSet ${selecting.join(', ')} would start a Pending pod on each of the ${names.length} fake nodes: redeploy it from this commit's deploy/ (its nodeSelector kubernetes.io/os=linux spares nodes without a kubelet) before running this bench`,
    );
  }
  let interrupted = false;
  const onSignal = (sig: NodeJS.Signals) => {
    if (interrupted) return;
    interrupted = true;
    process.stderr.write(`${sig}: deleting the ${names.length} fake nodes...\n`);
    void deleteFakeNodes(kc, names).finally(() => process.exit(130));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    process.stderr.write(`creating ${names.length} Node objects...\n`);
    await createFakeNodes(kc, names, labels);
    return await fn();
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    if (!interrupted) await deleteFakeNodes(kc, names);
  }
}
