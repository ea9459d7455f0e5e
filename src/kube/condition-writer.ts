// Writes the agent's Pod condition: from the pod's current condition and generation, patches pods/status when
// the condition says something else. The writes to one pod run one after another in the order they were asked
// for, so a caller may go on without waiting for one (a restart does not wait for its Restarting write) and a
// later write still lands after it. An API server that is briefly away is tried again.
import type { V1Pod } from '../k8s/client.js';
import { AgentError } from '../errors.js';
import type { Clock } from '../clock.js';
import { backoffDelay } from '../backoff.js';
import { retry } from '../retry.js';
import type { Logger } from '../log.js';
import type { KubeApi } from '../k8s/kube-api.js';
import { conditionPatch, type ConditionWant } from './ready-condition.js';

/** Tries of one write when the API server is unavailable. */
const TRIES = 5;

/** Delays between the tries, ms: 0.5, 1, 2, 4 s. */
const WRITE_RETRY_BACKOFF = { initialMs: 500, maxMs: 4000 };

/** Sets the condition on pods. */
export class ConditionWriter {
  /** Per pod (namespace/name): the last write queued, resolving to the pod it left (undefined when it failed). */
  private readonly tails = new Map<string, Promise<V1Pod | undefined>>();

  constructor(
    private readonly api: KubeApi,
    private readonly clock: Clock,
    private readonly log: Logger,
  ) {}

  /**
   * Makes the condition of namespace/name say want, after the writes to that pod asked for before; returns the
   * pod as written (or as read, when unchanged). `known` is a pod the caller has just read: with it the first try
   * does not read the pod again (a write queued behind another starts from what that one wrote).
   */
  set(namespace: string, name: string, want: ConditionWant, known?: V1Pod): Promise<V1Pod> {
    const key = `${namespace}/${name}`;
    const before = this.tails.get(key);
    const run = (before ?? Promise.resolve(undefined)).then((prev) => this.write(namespace, name, want, prev ?? known));
    const tail = run.then(
      (p) => p,
      () => undefined,
    );
    this.tails.set(key, tail);
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return run;
  }

  /** set() without waiting: a failure is logged. */
  post(namespace: string, name: string, want: ConditionWant, known?: V1Pod): void {
    this.set(namespace, name, want, known).catch((err: unknown) =>
      this.log.warn('cannot write the pod condition', { pod: `${namespace}/${name}`, reason: want.reason, error: err instanceof Error ? err.message : String(err) }),
    );
  }

  private write(namespace: string, name: string, want: ConditionWant, known: V1Pod | undefined): Promise<V1Pod> {
    const policy = {
      tries: TRIES,
      delay: (n: number) => backoffDelay(n, WRITE_RETRY_BACKOFF),
      retryable: (err: unknown) => AgentError.is(err, 'Unavailable', 'Aborted'),
      onRetry: (attempt: number, err: unknown) => this.log.warn('writing the pod condition failed; trying again', { pod: `${namespace}/${name}`, attempt, error: (err as Error).message }),
    };
    return retry(this.clock, policy, async (attempt) => {
      const pod = attempt === 1 && known ? known : await this.api.readPod(namespace, name);
      const patch = conditionPatch(pod, want, new Date(this.clock.now()));
      if (!patch) return pod;
      const written = await this.api.patchPodStatus(namespace, name, patch);
      this.log.debug('pod condition written', { pod: `${namespace}/${name}`, status: want.status, reason: want.reason });
      return written;
    });
  }
}
