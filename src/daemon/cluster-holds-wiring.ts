// At start-up in Kubernetes mode: what the cluster gives the features that need admission, logged once and kept
// for the Version call (`inplacectl version`). Read in the background: the agent does not wait for it to serve.
import type { KubeConfig } from '../k8s/client.js';
import { holdsReport, readClusterAdmission } from '../k8s/cluster-holds.js';
import type { ClusterHolds } from '../gen/inplace/v1/ClusterHolds.js';
import { asAgentError } from '../errors.js';
import type { Logger } from '../log.js';

/** Starts reading the cluster's holds; the returned getter gives undefined until the read has ended. */
export function watchClusterHolds(kc: KubeConfig, log: Logger): () => ClusterHolds | undefined {
  let holds: ClusterHolds | undefined;
  void readClusterAdmission(kc).then(
    (c) => {
      const r = holdsReport(c);
      holds = { kubernetesVersion: r.version, active: r.active, off: r.off, unknown: '' };
      log.info('what this cluster holds at admission', { kubernetesVersion: r.version, active: r.active, off: r.off });
    },
    (err: unknown) => {
      const e = asAgentError(err);
      holds = { kubernetesVersion: '', active: [], off: [], unknown: e.message };
      log.warn('cannot read what this cluster holds at admission; features that need it may be off', { error: e.message });
    },
  );
  return () => holds;
}
