// What this cluster gives the agent's admission-held features, read once at start-up: the API server's version,
// whether it serves MutatingAdmissionPolicy v1 (GA in 1.36), and which of the shipped mutating policies are
// installed (deploy/: the requester, the SidecarSet injection, the three workload holds). holdsReport() turns that
// into what is active and what is therefore off, as the agent logs it and `inplacectl version` prints it.
import { AdmissionregistrationV1Api, KubernetesObjectApi, VersionApi, type KubeConfig } from './client.js';
import { kubeCall } from './api-error.js';
import { AgentError } from '../errors.js';

/** The shipped MutatingAdmissionPolicies, by what each one holds or writes. */
export const SHIPPED_POLICIES = {
  requester: 'inplace-agent-requester',
  sidecarInjection: 'inplace-agent-sidecarset',
  holdDeployment: 'inplace-agent-hold-deployment',
  holdStatefulSet: 'inplace-agent-hold-statefulset',
  holdDaemonSet: 'inplace-agent-hold-daemonset',
} as const;

/** One of SHIPPED_POLICIES' keys. */
export type ShippedPolicy = keyof typeof SHIPPED_POLICIES;

/** What was read of the cluster. */
export interface ClusterAdmission {
  /** The API server's gitVersion (v1.37.2). */
  version: string;
  /** Whether admissionregistration.k8s.io/v1 serves mutatingadmissionpolicies. */
  mutatingPolicies: boolean;
  /** The shipped policies found installed. */
  installed: ShippedPolicy[];
}

/** What is active on this cluster, and what is off for want of it. */
export interface HoldsReport {
  version: string;
  active: string[];
  off: string[];
}

const FEATURES: { policy: ShippedPolicy; active: string; off: string }[] = [
  { policy: 'holdDeployment', active: 'Deployment held at admission (in-place Deployment rollouts)', off: 'Deployment rollouts in place (a rollout says NotHeld)' },
  { policy: 'holdStatefulSet', active: 'RollingUpdate StatefulSet held at admission', off: 'RollingUpdate StatefulSet rollouts in place (OnDelete ones still work)' },
  { policy: 'holdDaemonSet', active: 'RollingUpdate DaemonSet held at admission', off: 'RollingUpdate DaemonSet rollouts in place (OnDelete ones still work)' },
  { policy: 'requester', active: 'ContainerRestart requester written at admission', off: 'the requester written at admission (clients write spec.requester; inplacectl does)' },
  { policy: 'sidecarInjection', active: 'SidecarSet injection at pod creation', off: 'SidecarSet injection (upgrades of sidecars already in pods still work)' },
];

/** Pure: what is active and what is off, from what was read. */
export function holdsReport(c: ClusterAdmission): HoldsReport {
  const active: string[] = [];
  const off: string[] = [];
  for (const f of FEATURES) {
    if (c.installed.includes(f.policy)) active.push(f.active);
    else off.push(`${f.off}: ${c.mutatingPolicies ? `policy ${SHIPPED_POLICIES[f.policy]} not installed` : 'MutatingAdmissionPolicy v1 not served (Kubernetes 1.36 or later)'}`);
  }
  return { version: c.version, active, off };
}

/** Reads the cluster's version, whether it serves MutatingAdmissionPolicy v1, and which shipped policies exist. */
export async function readClusterAdmission(kc: KubeConfig): Promise<ClusterAdmission> {
  const code = await kubeCall('reading the API server\'s version', () => kc.makeApiClient(VersionApi).getCode());
  const resources = await kubeCall('discovering admissionregistration.k8s.io/v1', () => kc.makeApiClient(AdmissionregistrationV1Api).getAPIResources());
  const mutatingPolicies = resources.resources.some((r) => r.name === 'mutatingadmissionpolicies');
  const installed: ShippedPolicy[] = [];
  if (mutatingPolicies) {
    const objects = KubernetesObjectApi.makeApiClient(kc);
    for (const [key, name] of Object.entries(SHIPPED_POLICIES) as [ShippedPolicy, string][]) {
      try {
        await kubeCall(`reading MutatingAdmissionPolicy ${name}`, () => objects.read({ apiVersion: 'admissionregistration.k8s.io/v1', kind: 'MutatingAdmissionPolicy', metadata: { name } }));
        installed.push(key);
      } catch (err) {
        if (!AgentError.is(err, 'NotFound')) throw err;
      }
    }
  }
  return { version: code.gitVersion, mutatingPolicies, installed };
}
