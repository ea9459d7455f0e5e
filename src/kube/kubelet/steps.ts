// What the kubelet strategy owns of a restart: its steps and its request fields. The engine's types know
// neither; a ContainerRestart adds the fields to the request (container-restart/request.ts), the journal keeps
// them, and only this strategy reads them.
import { CommonSteps, type RestartRequest } from '../../engine/operation.js';

/**
 * Every step of a kubelet-managed container (the journal's record is held to these when it resumes):
 *
 *   Waiting --> Draining --+--> PreStop --> Stopping --> Stopped --+--> Verifying --> Verified --> Done
 *                          |   (same image)                        |       |
 *                          +--> Patching --> Patched --------------+       +--> RollingBack --> RolledBack | Failed
 *                              (new image)                                 +--> Failed (same image, or policy Fail)
 *
 * The containers of one operation go one after another within one drain: the first one's Draining drains the
 * pod; a later one's Draining waits for nothing (it shares that drain), and only the last one's Verified opens
 * the gate again.
 */
export const KubeletSteps = [...CommonSteps, 'Draining', 'PreStop', 'Stopping', 'Stopped', 'Patching', 'Patched'] as const;
/** One of KubeletSteps. */
export type KubeletStep = (typeof KubeletSteps)[number];

/**
 * What a failed image change leads to: Rollback patches the old image back; Fail leaves it. Either way the
 * operation stops at that container (see docs/kubernetes.md).
 */
export type FailurePolicy = 'Fail' | 'Rollback';

/** The request fields only the kubelet strategy reads. */
export interface KubeletOptions {
  /** What a failed image change leads to (default Rollback). */
  failurePolicy?: FailurePolicy;
  /** Longest wait for the pod's address to leave its EndpointSlices, ms (default DEFAULT_DRAIN_MS). */
  drainMs?: number;
  /**
   * The containers are stopped (and their images patched, in one patch) together within the pod's one drain,
   * then verified in order, rather than one after another (a ContainerRestart's `ordered: false`; default false).
   */
  together?: boolean;
}

/** A restart request with the kubelet strategy's fields. */
export type KubeletRequest = RestartRequest & KubeletOptions;

/** Default bound of the drain, ms. */
export const DEFAULT_DRAIN_MS = 5000;

/** The kubelet strategy's fields of a request (as journaled), with their defaults. */
export function kubeletOptions(req: RestartRequest): Required<KubeletOptions> {
  const r = req as KubeletRequest;
  return { failurePolicy: r.failurePolicy ?? 'Rollback', drainMs: r.drainMs ?? DEFAULT_DRAIN_MS, together: r.together ?? false };
}
