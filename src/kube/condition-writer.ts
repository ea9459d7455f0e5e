// Writes the agent's Pod condition: reads the pod for its current condition and generation, then patches
// pods/status when the condition says something else. An API server that is briefly away is tried again.
import type { V1Pod } from '@kubernetes/client-node';
import { AgentError } from '../errors.js';
import type { Clock } from '../clock.js';
import type { Logger } from '../log.js';
import type { KubeApi } from './kube-api.js';
import { conditionPatch, type ConditionWant } from './ready-condition.js';

/** Tries of one write when the API server is unavailable. */
const TRIES = 5;

/** Sets the condition on pods. */
export class ConditionWriter {
  constructor(
    private readonly api: KubeApi,
    private readonly clock: Clock,
    private readonly log: Logger,
  ) {}

  /** Makes the condition of namespace/name say want; returns the pod as written (or as read, when unchanged). */
  async set(namespace: string, name: string, want: ConditionWant): Promise<V1Pod> {
    for (let attempt = 1; ; attempt++) {
      try {
        const pod = await this.api.readPod(namespace, name);
        const patch = conditionPatch(pod, want, new Date(this.clock.now()));
        if (!patch) return pod;
        const written = await this.api.patchPodStatus(namespace, name, patch);
        this.log.debug('pod condition written', { pod: `${namespace}/${name}`, status: want.status, reason: want.reason });
        return written;
      } catch (err) {
        if (attempt >= TRIES || !AgentError.is(err, 'Unavailable', 'Aborted')) throw err;
        this.log.warn('writing the pod condition failed; trying again', { pod: `${namespace}/${name}`, attempt, error: (err as Error).message });
        await this.clock.sleep(Math.min(4000, 250 * 2 ** attempt));
      }
    }
  }
}
