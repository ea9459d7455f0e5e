// Makes a pod's kubelet sync the pod now, so that it takes in a readiness-gate condition written since its last
// sync. The kubelet's status manager computes the pod's Ready from the gates as its last pod sync copied them
// from the API server. A pods/status write makes the kubelet sync the pod only when the Ready condition it holds
// disagrees with the containers' readiness (it agrees while the new container is not ready yet). A write to the
// pod's metadata always does: the kubelet's pod watch sees a changed annotation as an update of the pod. With
// the gate taken in before the readiness probe passes, the kubelet sets Ready in the probe's own status write
// instead of a pod sync later (up to the PLEG's relist period, 1 s, after the previous sync).
import type { Logger } from '../log.js';
import { asAgentError } from '../errors.js';
import type { KubeApi } from './kube-api.js';

/** The annotation the agent writes after opening a pod's gate: the operation and the time, as `ID at TIME`. */
export const GATE_OPENED_ANNOTATION = 'inplace-agent.io/gate-opened';

/** The metadata-only patch that makes the kubelet sync the pod (a new value each time: the same one is no write). */
export function gateOpenedPatch(opId: string, at: Date): object {
  return { metadata: { annotations: { [GATE_OPENED_ANNOTATION]: `${opId} at ${at.toISOString()}` } } };
}

/** Writes the annotation once a gate write has landed. */
export class KubeletSync {
  constructor(
    private readonly api: KubeApi,
    private readonly now: () => number,
    private readonly log: Logger,
  ) {}

  /**
   * After `written` (the condition True) resolves, the metadata write; neither is waited for. A failed gate write
   * is logged as the condition writer logs it, and then nothing is written; a failed metadata write is logged
   * only: the kubelet takes the gate in at its next sync of the pod, as without it.
   */
  afterGate(written: Promise<unknown>, ns: string, name: string, opId: string): void {
    void written.then(
      () =>
        this.api.patchPod(ns, name, gateOpenedPatch(opId, new Date(this.now()))).then(
          () => this.log.debug('pod annotated for a kubelet sync', { pod: `${ns}/${name}`, op: opId }),
          (err: unknown) => this.log.warn('cannot annotate the pod for a kubelet sync', { pod: `${ns}/${name}`, op: opId, error: asAgentError(err).message }),
        ),
      (err: unknown) => this.log.warn('cannot write the pod condition', { pod: `${ns}/${name}`, op: opId, error: asAgentError(err).message }),
    );
  }
}
