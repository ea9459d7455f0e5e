// One round of one rollout, by the coordinating agent: read the objects, ask the planner, do what it says (in
// its order, and only while this agent still coordinates), write the status it derived. Nothing is carried
// from one round to the next but the back-off of creates that could not be made (create-refusals.ts): a new
// coordinator picks up exactly where the last one was. What the rollout creates is owned by it, and only what it
// owns counts as its own or is deleted (ownership.ts). A create that finds its name taken by another owner, or
// that the API server refuses, is handed back to the planner, whose status then names it.
import type { Logger } from '../../log.js';
import { CR_GROUP, CR_KIND, CR_VERSION, type ContainerRestart } from '../container-restart/types.js';
import { recordedRequester } from '../../k8s/requester.js';
import { CreateRefusals } from '../kit/create-refusals.js';
import { createOrTaken } from '../kit/create-or-taken.js';
import { PREWARM_BACKOFF_LIMIT, PREWARM_PARALLEL_NODES } from '../kit/prewarm-settings.js';
import { statusWrite, type StatusWrites } from '../kit/status-pace.js';
import { REVISION_HASH_ANNOTATION, REVISION_NUMBER_ANNOTATION } from './observe.js';
import { deletablePrewarm, prewarmMismatch, restartMismatch, rolloutOwnerRef } from './ownership.js';
import { DEFAULT_PROGRESS_DEADLINE_SECONDS, planRollout, targetRevision, type CreateConflict, type Plan, type PlanInput, type RolloutAction } from './plan.js';
import type { ImagePrewarm } from '../image-prewarm/types.js';
import type { RolloutApi } from './rollout-api.js';
import { guardedWrite, guardPlan } from './rollout-access.js';
import { boundStatus } from './status-bounds.js';
import { ROLLOUT_LABEL, type InPlaceRollout, type InPlaceRolloutStatus } from './types.js';
import type { DeploymentApi } from './workloads/deployment-api.js';
import { finishDeployment, markReplicaSet, releaseHeld } from './workloads/deployment-round.js';
import { observe } from './snapshot.js';

/** What of a rollout's status may wait for the pace (kit/status-pace.ts): counts, pods in flight, messages. */
export const ROLLOUT_PROGRESS: (keyof InPlaceRolloutStatus)[] = ['replicas', 'updatedReplicas', 'readyReplicas', 'podsInFlight', 'message'];
/**
 * The longest activeDeadlineSeconds a ContainerRestart takes (deploy/crds/containerrestart.yaml). The rollout CRD
 * keeps minReadySeconds + progressDeadlineSeconds within it; a rollout stored before that rule is clamped to it.
 */
export const CR_MAX_ACTIVE_DEADLINE_SECONDS = 86_400;

/** What a round needs. */
export interface ReconcileDeps {
  api: RolloutApi;
  /** This agent's node (written to the status as the coordinator). */
  node: string;
  nowMs(): number;
  /** Whether this agent still coordinates; checked before every write. */
  leading(): boolean;
  log: Logger;
  /** Creates that could not be made, and their back-off (kept by the coordinator across rounds). */
  refusals?: CreateRefusals;
  /** Deployments and their ReplicaSets (a rollout of a Deployment fails its rounds without). */
  deployments?: DeploymentApi;
  /** The last status write of each rollout (kept by the coordinator): progress alone is paced (status-pace.ts). */
  statusWrites?: StatusWrites;
}


/** The ContainerRestart of one pod update, owned by the rollout, asked for by the rollout's requester. */
export function restartObject(rollout: InPlaceRollout, a: Extract<RolloutAction, { kind: 'restart' }>): ContainerRestart {
  const s = rollout.spec.strategy ?? {};
  const minReady = s.minReadySeconds ?? 0;
  const requester = recordedRequester(rollout.spec);
  return {
    apiVersion: `${CR_GROUP}/${CR_VERSION}`,
    kind: CR_KIND,
    metadata: {
      name: a.name,
      namespace: rollout.metadata.namespace,
      labels: { [ROLLOUT_LABEL]: rollout.metadata.uid ?? '' },
      annotations: { [REVISION_HASH_ANNOTATION]: a.revisionHash, [REVISION_NUMBER_ANNOTATION]: String(a.revisionNumber) },
      ownerReferences: [rolloutOwnerRef(rollout)],
    } as ContainerRestart['metadata'],
    spec: {
      podName: a.pod,
      containers: a.containers,
      strategy: {
        ...(s.gracePeriodSeconds !== undefined ? { gracePeriodSeconds: s.gracePeriodSeconds } : {}),
        ...(s.drainSeconds !== undefined ? { drainSeconds: s.drainSeconds } : {}),
        minReadySeconds: minReady,
        // Pause leaves the failed pod as it is, for a person; Rollback puts the old image back in place.
        failurePolicy: s.failurePolicy === 'Pause' ? 'Fail' : 'Rollback',
        // The pod's containers replaced together within its one drain (a restart's every container, or several images).
        ordered: false,
      },
      activeDeadlineSeconds: Math.min(CR_MAX_ACTIVE_DEADLINE_SECONDS, minReady + (rollout.spec.progressDeadlineSeconds ?? DEFAULT_PROGRESS_DEADLINE_SECONDS)),
      ...(requester ? { requester } : {}),
    },
  };
}

/** Carries out one action; a create that could not be made answers its conflict. */
async function act(d: ReconcileDeps, rollout: InPlaceRollout, selector: Record<string, string>, a: RolloutAction): Promise<CreateConflict | undefined> {
  const ns = rollout.metadata.namespace ?? 'default';
  const key = `${ns}/${rollout.metadata.name}`;
  switch (a.kind) {
    case 'restart': {
      const cr = restartObject(rollout, a);
      const create = async () => {
        await d.api.createRestart(cr);
        d.log.info('rollout: pod update started', { rollout: key, pod: a.pod, containerrestart: a.name, images: a.containers.map((c) => `${c.name}=${c.image}`).join(',') });
      };
      return createOrTaken({ kind: 'ContainerRestart', name: a.name, owner: 'this rollout', create, found: () => d.api.getRestart(ns, a.name), mismatch: (found) => restartMismatch(rollout, found, cr) }, d.log);
    }
    case 'relabel':
      await d.api.patchPodMetadata(ns, a.pod, a.podUid, a.labels, a.annotations);
      d.log.info('rollout: pod relabelled to its new revision', { rollout: key, pod: a.pod, labels: JSON.stringify(a.labels) });
      return undefined;
    case 'recreate':
      await d.api.deletePod(ns, a.pod, a.podUid);
      d.log.info('rollout: pod deleted for the controller to recreate (fallback Recreate)', { rollout: key, pod: a.pod, reason: a.reason });
      return undefined;
    case 'prewarm': {
      const create = async () => {
        await d.api.createPrewarm(prewarmObject(rollout, selector, a));
        d.log.info('rollout: pre-warm created', { rollout: key, prewarm: a.name, images: a.images.join(',') });
      };
      return createOrTaken({ kind: 'ImagePrewarm', name: a.name, owner: 'this rollout', create, found: () => d.api.getPrewarm(a.name), mismatch: (found) => prewarmMismatch(rollout, found, a.images) }, d.log);
    }
  }
}

/** The ImagePrewarm of a rollout's revision, owned by the rollout, asked for by the rollout's requester. */
export function prewarmObject(rollout: InPlaceRollout, selector: Record<string, string>, a: Extract<RolloutAction, { kind: 'prewarm' }>): ImagePrewarm & { metadata: { labels?: Record<string, string> } } {
  const requester = recordedRequester(rollout.spec);
  return {
    // Cluster-scoped with a namespaced owner: the garbage collector leaves it alone (the coordinator deletes it).
    metadata: { name: a.name, labels: { [ROLLOUT_LABEL]: rollout.metadata.uid ?? '' }, ownerReferences: [rolloutOwnerRef(rollout)] } as ImagePrewarm['metadata'],
    spec: {
      images: a.images,
      podSelector: { namespace: rollout.metadata.namespace ?? 'default', matchLabels: selector },
      maxParallelNodes: PREWARM_PARALLEL_NODES,
      backoffLimit: PREWARM_BACKOFF_LIMIT,
      activeDeadlineSeconds: rollout.spec.progressDeadlineSeconds ?? DEFAULT_PROGRESS_DEADLINE_SECONDS,
      ...(requester ? { requester } : {}),
    },
  };
}

/** One round: observe, plan, act, write the status. `all` is every rollout of the round. Returns the plan. */
export async function reconcileRollout(d: ReconcileDeps, rollout: InPlaceRollout, all: InPlaceRollout[] = [rollout]): Promise<Plan> {
  const uid = rollout.metadata.uid ?? '';
  const generation = rollout.metadata.generation ?? 0;
  const refusals = d.refusals ?? new CreateRefusals();
  const { input: observed, deployment, selector } = await observe(d.api, rollout, all, d.nowMs(), d.deployments);
  // Creates still backing off are not tried again: the planner makes them failures at once.
  const input: PlanInput = { ...observed, conflicts: refusals.active(uid, generation, d.nowMs()) };
  // Nothing is done that the rollout's requester could not do (rollout-access.ts).
  let plan = await guardPlan(d.api, rollout, planRollout(input), d.nowMs());
  // A held Deployment's ReplicaSet takes the target (marked) before its pods do: a scale's new pods are born on it.
  if (deployment && d.deployments && d.leading()) {
    const p = plan;
    const ds = d.deployments;
    plan = await guardedWrite(rollout, p, d.nowMs(), () => markReplicaSet(d.api, ds, rollout, deployment, p, d.log));
  }
  const conflicts: CreateConflict[] = [];
  for (const a of plan.actions) {
    if (!d.leading()) return plan;
    const c = await act(d, rollout, selector ?? {}, a);
    if (c) {
      conflicts.push(c);
      refusals.refused(uid, generation, c, d.nowMs());
    } else if (a.kind === 'restart' || a.kind === 'prewarm') refusals.created(uid, a.name);
  }
  // The status says what could not be made (the pods it was for are not counted as started); nothing more is done this round.
  if (conflicts.length > 0) plan = { ...planRollout({ ...input, conflicts: [...(input.conflicts ?? []), ...conflicts] }), actions: [] };
  // Pre-warms of this rollout that no round needs any more (started, or of an older revision): its own only.
  for (const pw of await d.api.listPrewarms(uid)) {
    if (pw.metadata.name !== plan.prewarm && deletablePrewarm(rollout, pw) && d.leading()) await d.api.deletePrewarm(pw.metadata.name, pw.metadata.uid ?? '');
  }
  // A Deployment's hold released once its pods are done, or for a change beyond images (workloads/deployment-round.ts).
  // Each asks the requester's patch on the workload first; refused, the rollout says Forbidden (rollout-access.ts).
  const deployments = d.deployments;
  if (deployment && deployments && d.leading()) {
    const p = plan;
    plan = await guardedWrite(rollout, p, d.nowMs(), () => finishDeployment(d.api, deployments, rollout, deployment, p, d.log));
  }
  if (input.workload && deployments && d.leading()) {
    const p = plan;
    const w = input.workload;
    plan = await guardedWrite(rollout, p, d.nowMs(), () => releaseHeld(d.api, deployments, rollout, w, p, d.log, targetRevision(w, input.revisions)?.hash));
  }
  const status = boundStatus({ ...plan.status, coordinator: d.node });
  const write = statusWrite(rollout.status, status, d.statusWrites?.last(uid), d.nowMs(), ROLLOUT_PROGRESS);
  if (typeof write === 'number') return { ...plan, wakeAtMs: Math.min(plan.wakeAtMs ?? Infinity, write) };
  if (write === 'now' && d.leading()) {
    await d.api.writeRolloutStatus(rollout, status);
    d.statusWrites?.wrote(uid, d.nowMs());
  }
  return plan;
}
