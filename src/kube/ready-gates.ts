// A pod that lists `inplace-agent.io/ready` in its readinessGates never becomes Ready until someone sets the
// condition. The agent sets it True (reason Ready) on every pod of its node that gates on it and lacks it.
import type { V1Pod } from '../k8s/client.js';
import type { Logger } from '../log.js';
import type { ConditionWriter } from './condition-writer.js';
import { ConditionReasons, currentCondition, gatesOnCondition } from './ready-condition.js';

/** Sets the condition on pods that gate on it and lack it, as the node's pods are seen. */
export class ReadyGates {
  private readonly inFlight = new Set<string>();

  constructor(
    private readonly conditions: ConditionWriter,
    private readonly log: Logger,
  ) {}

  /** Looks at one pod (from the informer); writes the condition when it is needed. */
  seen(pod: V1Pod): void {
    const uid = pod.metadata?.uid ?? '';
    if (!gatesOnCondition(pod) || currentCondition(pod) || pod.metadata?.deletionTimestamp || this.inFlight.has(uid)) return;
    const ns = pod.metadata?.namespace ?? 'default';
    const name = pod.metadata?.name ?? '';
    this.inFlight.add(uid);
    this.conditions
      .set(ns, name, { status: 'True', reason: ConditionReasons.Ready, message: 'no restart in progress' })
      .then(
        () => this.log.info('readiness gate condition set', { pod: `${ns}/${name}` }),
        (err: unknown) => this.log.warn('cannot set the readiness gate condition', { pod: `${ns}/${name}`, error: err instanceof Error ? err.message : String(err) }),
      )
      .finally(() => this.inFlight.delete(uid));
  }
}
