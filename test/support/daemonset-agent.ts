// The agent of the shared cluster's DaemonSet (scripts/kube-deploy-agent) on one node, as a test on the host
// reaches it: its API socket and state under the DaemonSet's hostPaths (the test cluster's nodes share this
// machine, so its overlay gives each node's agent the subdirectory of its node name), its metrics address (the
// pod's IP, which is the node's on the host network) and its identity. Tests never start a second agent for that node.
import fs from 'node:fs/promises';
import path from 'node:path';
import { AppsV1Api, CoreV1Api, type KubeConfig, type V1DaemonSet, type V1Pod } from '@kubernetes/client-node';
import { joinHostPort } from '../../src/host-port.js';
import { kubeEnv } from '../testbed/kube-env.js';

/** The DaemonSet's namespace and name (deploy/daemonset.yaml). */
export const AGENT_DS = { namespace: 'inplace-system', name: 'inplace-agent' };

/** One node's agent of the DaemonSet. */
export interface DaemonSetAgent {
  node: string;
  /** Its Ready pod. */
  pod: V1Pod;
  /** Its API's unix socket on the host. */
  socket: string;
  /** HOST:PORT of its /metrics, /healthz and /readyz (an IPv6 host in brackets). */
  metricsAddr: string;
  /** The agent's identity (agent-id in its state directory), as ContainerRestart statuses name it. */
  id: string;
}

/** The host path of one of the DaemonSet's hostPath volumes, as the agent container on `node` sees it mounted. */
function hostPathOf(ds: V1DaemonSet, volume: string, node: string): string {
  const spec = ds.spec?.template.spec;
  const base = spec?.volumes?.find((v) => v.name === volume)?.hostPath?.path;
  if (!base) throw new Error(`the DaemonSet ${AGENT_DS.namespace}/${AGENT_DS.name} has no hostPath volume "${volume}"`);
  const mount = spec?.containers.find((c) => c.name === 'agent')?.volumeMounts?.find((m) => m.name === volume);
  return path.join(base, mount?.subPathExpr === '$(NODE_NAME)' ? node : (mount?.subPath ?? ''));
}

/** The DaemonSet's agent on node (default: the cluster's first), once its pod is Ready; throws saying what is missing. */
export async function daemonSetAgent(kc: KubeConfig, node = kubeEnv().nodeName): Promise<DaemonSetAgent> {
  const ds = await kc.makeApiClient(AppsV1Api).readNamespacedDaemonSet(AGENT_DS);
  const pods = await kc.makeApiClient(CoreV1Api).listNamespacedPod({ namespace: AGENT_DS.namespace, fieldSelector: `spec.nodeName=${node}`, labelSelector: 'app.kubernetes.io/name=inplace-agent' });
  const pod = pods.items.find((p) => !p.metadata?.deletionTimestamp && p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'));
  if (!pod?.status?.podIP) throw new Error(`no Ready pod of the DaemonSet ${AGENT_DS.namespace}/${AGENT_DS.name} on ${node}`);
  const port = pod.spec?.containers.find((c) => c.name === 'agent')?.ports?.find((p) => p.name === 'metrics')?.containerPort ?? 9464;
  return {
    node,
    pod,
    socket: path.join(hostPathOf(ds, 'agent-run', node), 'agent.sock'),
    metricsAddr: joinHostPort(pod.status.podIP, port),
    id: (await fs.readFile(path.join(hostPathOf(ds, 'state', node), 'agent-id'), 'utf8')).trim(),
  };
}
