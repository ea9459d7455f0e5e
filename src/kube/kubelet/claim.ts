// Which containers the kubelet strategy takes, and the Pulling/Pulled events it records for them while the
// executor makes their new images present (the kubelet records these when it pulls; here the agent pulls).
import type { V1Pod } from '../../k8s/client.js';
import { AgentError, asAgentError } from '../../errors.js';
import type { Logger } from '../../log.js';
import type { ContainerTarget, Operation, RestartRequest } from '../../engine/operation.js';
import { KUBELET_POD_UID_LABEL, type PlannedTarget } from '../../engine/restart-plan.js';
import { RefusalReasons as R } from '../../engine/reasons.js';
import type { Runtime } from '../../runtime/runtime.js';
import type { Pod } from '../../runtime/types.js';
import { EventReasons, type PodEvents } from '../pod-events.js';
import { checkPreStop } from '../pre-stop.js';
import { kubeletRefusal, specContainer } from '../restart-policy.js';
import type { PodCache } from './pod-cache.js';
import { splitName } from './pod-name.js';

/** What claiming needs. */
export interface ClaimDeps {
  cache: PodCache;
  runtime: Runtime;
  events: PodEvents;
  log: Logger;
  /**
   * This node's pods as its watch last saw them (NodePods.get), when there is such a watch: a pod found there is
   * not read from the API server again before the claim.
   */
  watched?: (namespace: string, name: string) => V1Pod | undefined;
  /**
   * Whether a container of a sandbox no kubelet made (no io.kubernetes.pod.uid label) is left to the standalone
   * strategy (--container-restart-standalone-pods); by default it is refused, whoever asks (PodNotInApiServer).
   */
  standalonePods?: boolean;
}

/** Claims kubelet-managed containers, and records the pull events of the operations that change their images. */
export class KubeletClaims {
  /** Per operation and container: its Pulling and Pulled events being recorded (the patch follows them). */
  private readonly pullEvents = new Map<string, Promise<void>>();
  /**
   * Per operation and container: whether its new image was present as the operation was admitted (then the
   * agent records no pull event for it; see admitted).
   */
  private readonly early = new Map<string, Promise<boolean>>();

  constructor(private readonly d: ClaimDeps) {}

  /**
   * See RestartStrategy.claim: every kubelet-managed container, unless the API server's pod forbids it. A
   * container of a sandbox no kubelet made is refused (an RPC restart too), unless standalonePods.
   */
  async claim(pod: Pod, target: PlannedTarget, req: RestartRequest): Promise<boolean> {
    const uid = target.current.labels[KUBELET_POD_UID_LABEL];
    if (!uid) {
      if (this.d.standalonePods) return false;
      throw new AgentError(
        'FailedPrecondition',
        `pod ${pod.name} is a sandbox no kubelet made (container ${target.name} has no ${KUBELET_POD_UID_LABEL} label), so no API server knows it: in Kubernetes mode the agent restarts the API server's pods only (--container-restart-standalone-pods lets it take such sandboxes); nothing was touched`,
        { reason: R.PodNotInApiServer },
      );
    }
    const [ns, name] = splitName(pod.name);
    let apiPod: V1Pod;
    try {
      apiPod = this.fromWatch(ns, name, uid) ?? (await this.d.cache.read(ns, name));
    } catch (err) {
      if (!AgentError.is(err, 'NotFound')) throw err;
      throw new AgentError('FailedPrecondition', `pod ${pod.name} is managed by a kubelet but the API server does not know it; nothing was touched`, { reason: R.PodNotInApiServer });
    }
    // A static pod runs under the uid the kubelet derived from its file, which its mirror pod records in the
    // kubernetes.io/config.mirror annotation (the mirror's own uid is another).
    if ((apiPod.metadata?.annotations?.['kubernetes.io/config.mirror'] ?? apiPod.metadata?.uid) !== uid) {
      throw new AgentError('FailedPrecondition', `pod ${pod.name} in the API server (uid ${apiPod.metadata?.uid}) is not the one on this node (uid ${uid}); nothing was touched`, { reason: R.PodNotInApiServer });
    }
    if (apiPod.metadata?.deletionTimestamp) throw new AgentError('FailedPrecondition', `pod ${pod.name} is being deleted; nothing was touched`, { reason: R.PodNotInApiServer });
    const spec = specContainer(apiPod, target.name);
    const same = !req.images[target.name] || req.images[target.name] === spec?.container.image;
    const refusal = kubeletRefusal(apiPod, target.name, same);
    if (refusal) throw new AgentError('FailedPrecondition', `${refusal}; nothing was touched`, { reason: R.KubeletWouldNotRestart });
    if (!same && apiPod.metadata?.annotations?.['kubernetes.io/config.mirror']) {
      throw new AgentError('FailedPrecondition', `pod ${pod.name} is a static pod: its spec cannot be changed through the API server, so its image cannot be; nothing was touched`, { reason: R.KubeletWouldNotRestart });
    }
    if (same && !req.skipPreStop && spec) checkPreStop(spec.container);
    // The runtime knows the image by the id the kubelet resolved; the pod spec's reference is the one to keep.
    if (spec) {
      target.current = { ...target.current, image: spec.container.image ?? target.current.image };
      target.newImage = req.images[target.name] ?? target.current.image;
    }
    return true;
  }

  /**
   * The pod as this node's watch holds it, when it is the instance the runtime runs (uid), remembered as the
   * latest read: the API server's own view, a watch event old at most, with no request on the way to the claim.
   * Undefined (the pod is read) when the watch has no such pod yet (one just created, or another instance).
   */
  private fromWatch(ns: string, name: string, uid: string): V1Pod | undefined {
    const pod = this.d.watched?.(ns, name);
    if (!pod || (pod.metadata?.annotations?.['kubernetes.io/config.mirror'] ?? pod.metadata?.uid) !== uid) return undefined;
    this.d.cache.remember(ns, name, pod);
    return pod;
  }

  /**
   * The Pulling event, kubelet style, as the executor begins making the new image present, and the Pulled event
   * once it is; the pull does not wait for them, the spec patch does (takePullEvents). As the kubelet does,
   * Pulling only when the node does not have the image by that reference (then Pulled says it was already present).
   */
  pulling(op: Operation, t: ContainerTarget, result: Promise<{ pulled: boolean }>): void {
    const key = `${op.id}/${t.name}`;
    const early = this.early.get(key);
    this.early.delete(key);
    // The image present as the operation was admitted: no event; otherwise (no image then) the events of the pull.
    if (early) this.pullEvents.set(key, early.then((present) => (present ? undefined : this.pullEventsOf(op, t, result))));
    else this.pullEvents.set(key, this.pullEventsOf(op, t, result));
  }

  /**
   * As the operation is admitted (nothing touched yet), looks whether the node has each new image: one it has
   * gets no event of the agent's (the kubelet records its own Pulled, "already present on machine", as it
   * starts the new instance), so the image-change path has no event to wait for after its Patching record. An
   * image the node lacks gets its Pulling and Pulled events from pulling(), as before.
   */
  admitted(op: Operation, present?: (image: string) => Promise<boolean> | undefined): void {
    for (const t of op.containers) {
      if (t.strategy !== 'kubelet' || t.newImage === t.oldImage) continue;
      // The look the engine began as the request arrived, when there is one: no second read of the runtime.
      const found = present?.(t.newImage) ?? this.d.runtime.inspectImage(t.newImage).then((i) => i !== undefined);
      const settled = found.then(
        (have) => have, // present: no event of the agent's is due
        () => false, // unknown: the pull check decides, and its events follow it
      );
      this.early.set(`${op.id}/${t.name}`, settled);
    }
  }

  private pullEventsOf(op: Operation, t: ContainerTarget, result: Promise<{ pulled: boolean }>): Promise<void> {
    const [ns, name] = splitName(op.podName);
    const cached = this.d.cache.recentOf(ns, name);
    const pod = cached ? Promise.resolve(cached) : this.d.cache.read(ns, name);
    const present = this.d.runtime.inspectImage(t.newImage).then(
      (i) => i !== undefined,
      () => false, // unknown: the download is announced, as it may well happen
    );
    const done = Promise.all([pod, present]).then(
      async ([p, have]) => {
        const pulling = have ? Promise.resolve() : this.d.events.record(p, t.name, 'Normal', EventReasons.Pulling, `Pulling image "${t.newImage}"`);
        const got = await result.catch(() => undefined); // a failed pull fails the operation, with its own message
        // Pulled only after a download, or to close the agent's own Pulling: the kubelet says "already present".
        if (got && (got.pulled || !have)) await this.d.events.record(p, t.name, 'Normal', EventReasons.Pulled, pulledMessage(t.newImage, got.pulled));
        await pulling;
      },
      (err: unknown) => {
        this.d.log.warn('cannot record an event', { pod: op.podName, reason: EventReasons.Pulling, error: asAgentError(err).message });
      },
    );
    return done;
  }

  /**
   * Resolves once the container's Pulled event is on record: the one pulling() began, or (an operation resumed
   * after its pull, in another process) one recorded now.
   */
  async pulledRecorded(op: Operation, t: ContainerTarget, pod: V1Pod): Promise<void> {
    const key = `${op.id}/${t.name}`;
    const events = this.pullEvents.get(key);
    this.pullEvents.delete(key);
    if (events) await events;
    else if (op.pulls?.find((p) => p.image === t.newImage)?.pulled) await this.d.events.record(pod, t.name, 'Normal', EventReasons.Pulled, pulledMessage(t.newImage, true));
  }

  /** Forgets what an ended operation left. */
  forget(op: Operation): void {
    for (const c of op.containers) {
      this.pullEvents.delete(`${op.id}/${c.name}`);
      this.early.delete(`${op.id}/${c.name}`);
    }
  }
}

/** The Pulled event's message, as the kubelet words it. */
function pulledMessage(image: string, pulled: boolean): string {
  return pulled ? `Successfully pulled image "${image}"` : `Container image "${image}" already present on machine`;
}
