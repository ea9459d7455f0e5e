// `kubectl inplace pods`: pods from the API server with their containers (by name) and, per pod, the newest
// ContainerRestart that names it; loaded only when the command runs (the Kubernetes client is large).
import { CoreV1Api, type V1Pod } from '../k8s/client.js';
import { kubeError } from '../k8s/api-error.js';
import { ContainerRestartApi } from '../controllers/container-restart/api.js';
import type { ContainerRestart } from '../controllers/container-restart/types.js';
import { loadTarget, namespaceOf, type KubeTarget } from './kube-target.js';
import { table } from './render.js';

/** One container of a listed pod. */
export interface PluginContainer {
  name: string;
  image: string;
  ready: boolean;
  restartCount: number;
  /** running, waiting (with its reason) or terminated (with its reason). */
  state: string;
}

/** One listed pod. */
export interface PluginPod {
  namespace: string;
  name: string;
  node?: string;
  phase?: string;
  containers: PluginContainer[];
  /** The newest ContainerRestart of the pod: its name and phase (absent when there is none). */
  lastRestart?: { name: string; phase: string };
}

function stateOf(p: V1Pod, name: string): Pick<PluginContainer, 'ready' | 'restartCount' | 'state'> {
  const s = p.status?.containerStatuses?.find((c) => c.name === name);
  const st = s?.state;
  const state = st?.running ? 'running' : st?.waiting ? `waiting${st.waiting.reason ? ` (${st.waiting.reason})` : ''}` : st?.terminated ? `terminated${st.terminated.reason ? ` (${st.terminated.reason})` : ''}` : 'unknown';
  return { ready: !!s?.ready, restartCount: s?.restartCount ?? 0, state };
}

/** When the API server created the object (RFC 3339, comparable as text); '' when not known. */
function created(r: ContainerRestart): string {
  return (r.metadata as { creationTimestamp?: string | Date }).creationTimestamp?.toString() ?? '';
}

/** Pods of the target's namespace (or of all), newest ContainerRestart of each. */
export async function listPods(target: KubeTarget & { allNamespaces: boolean }): Promise<PluginPod[]> {
  const kc = await loadTarget(target);
  const ns = target.allNamespaces ? undefined : namespaceOf(kc, target);
  const core = kc.makeApiClient(CoreV1Api);
  let items: V1Pod[];
  try {
    items = (ns ? await core.listNamespacedPod({ namespace: ns }) : await core.listPodForAllNamespaces()).items;
  } catch (err) {
    throw kubeError(err, ns ? `list pods in namespace ${ns}` : 'list pods', 'user');
  }
  // No ContainerRestart CRD installed (or no right to read them) leaves the column empty.
  const restarts: ContainerRestart[] = await new ContainerRestartApi(kc, 'user').list(ns).then((l) => l.items, () => []);
  const newest = new Map<string, ContainerRestart>();
  for (const r of restarts) {
    const key = `${r.metadata.namespace}/${r.spec.podName}`;
    const cur = newest.get(key);
    if (!cur || created(r) > created(cur)) newest.set(key, r);
  }
  return items
    .map((p) => {
      const namespace = p.metadata?.namespace ?? '';
      const name = p.metadata?.name ?? '';
      const last = newest.get(`${namespace}/${name}`);
      const pod: PluginPod = {
        namespace,
        name,
        node: p.spec?.nodeName,
        phase: p.status?.phase,
        containers: (p.spec?.containers ?? []).map((c) => ({ name: c.name, image: c.image ?? '', ...stateOf(p, c.name) })).sort((a, b) => a.name.localeCompare(b.name)),
      };
      if (last) pod.lastRestart = { name: last.metadata.name ?? '', phase: last.status?.phase ?? 'Pending' };
      return JSON.parse(JSON.stringify(pod)) as PluginPod;
    })
    .sort((a, b) => a.namespace.localeCompare(b.namespace) || a.name.localeCompare(b.name));
}

/** The pods as a table, one row per container. */
export function renderPluginPods(pods: PluginPod[], withNamespace: boolean): string {
  if (pods.length === 0) return 'no pods';
  const head = ['POD', 'NODE', 'CONTAINER', 'READY', 'RESTARTS', 'STATE', 'IMAGE', 'LAST IN-PLACE RESTART'];
  const rows = [withNamespace ? ['NAMESPACE', ...head] : head];
  for (const p of pods) {
    const last = p.lastRestart ? `${p.lastRestart.name} ${p.lastRestart.phase}` : '-';
    for (const c of p.containers) {
      const row = [p.name, p.node ?? '-', c.name, c.ready ? 'true' : 'false', String(c.restartCount), c.state, c.image, last];
      rows.push(withNamespace ? [p.namespace, ...row] : row);
    }
  }
  return table(rows);
}
