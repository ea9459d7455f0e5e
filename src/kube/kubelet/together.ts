// The containers of one operation replaced together within the pod's one drain (a request with `together`, a
// ContainerRestart's `ordered: false`): the first container's call carries the others along, so that the kubelet
// starts every new instance in one pod sync instead of one sync (about a second) per container.
//
//   first container:  Draining (the pod's drain) -------------------------+
//   companions:       Waiting --> Draining (shared) --> PreStop | Stopping | Patching   (marked, then journaled
//                                                                                         with the first's step)
//   all at once:      the preStop hooks --> Stopping journaled --> the stops and ONE image patch
//   each:             Stopped | Patched; then verified in order by its own call (the executor's loop), and the
//                     gate opens once the last one's new instance is seen (way-back.ts, opensAtStart).
//
// Every step is journaled before its side effect, as in the step machine (strategy.ts): an agent restarted half way
// resumes each container from its own step (a stop read back is not repeated, a patch is idempotent).
import type { V1Pod } from '../../k8s/client.js';
import type { ContainerStep, ContainerTarget, Operation } from '../../engine/operation.js';
import type { StepContext } from '../../engine/restart-strategy.js';
import type { Runtime } from '../../runtime/runtime.js';
import { podDrainer, podTargets } from '../drain/pod-drain.js';
import { noteUndrained, shareDrain, type WayBackDeps } from '../drain/way-back.js';
import { preStopHandler } from '../pre-stop.js';
import { specContainer } from '../restart-policy.js';
import type { KubeletClaims } from './claim.js';
import type { PodActions } from './pod-actions.js';
import { splitName } from './pod-name.js';
import { kubeletOptions, type KubeletStep } from './steps.js';

/** What carrying containers along needs. */
export interface TogetherDeps {
  runtime: Pick<Runtime, 'containerState'>;
  actions: PodActions;
  claims: Pick<KubeletClaims, 'pulledRecorded'>;
  way: WayBackDeps;
}

/** The step a container's replacement begins with: an image patch, or its preStop hook (if any) then the stop. */
export function actStep(op: Operation, c: ContainerTarget, pod: V1Pod): 'Patching' | 'PreStop' | 'Stopping' {
  if (c.newImage !== c.oldImage) return 'Patching';
  const spec = specContainer(pod, c.name)?.container;
  return spec && !op.request.skipPreStop && preStopHandler(spec) ? 'PreStop' : 'Stopping';
}

/** Replaces several containers of a pod at once. */
export class Together {
  constructor(private readonly d: TogetherDeps) {}

  /**
   * The containers that go with t: with `together`, every later one of the operation when none of them has begun
   * (all at Waiting) and its old instance still runs. (One that no longer runs is left to its own turn, where the
   * executor fails it untouched.)
   */
  async companions(op: Operation, t: ContainerTarget): Promise<ContainerTarget[]> {
    if (!kubeletOptions(op.request).together) return [];
    const later = podTargets(op, 'kubelet').slice(podTargets(op, 'kubelet').indexOf(t) + 1);
    if (later.some((c) => c.step !== 'Waiting')) return [];
    const states = await Promise.all(later.map((c) => this.d.runtime.containerState(c.oldId).catch(() => 'unknown')));
    return later.filter((_c, i) => states[i] === 'running');
  }

  /**
   * From t's drain to every container of the group stopped or patched: the companions' steps are entered (the
   * pod's drain shared) and journaled with t's, the preStop hooks run side by side, then the stops and one patch
   * of every new image. Each container of the group ends at Stopped or Patched. `enter` journals t's step;
   * `announce` writes what was held back for the first stop or patch.
   */
  async act(op: Operation, t: ContainerTarget, companions: ContainerTarget[], pod: V1Pod, ctx: StepContext, enter: (s: KubeletStep) => Promise<void>, announce: () => void): Promise<void> {
    const group = [t, ...companions];
    const mark = (c: ContainerTarget, s: ContainerStep) => (c === t ? ctx.mark(s) : ctx.markOf(c, s));
    const by = podDrainer(op, 'kubelet');
    for (const c of companions) {
      ctx.markOf(c, 'Draining');
      if (by) shareDrain(c, by, ctx);
      else noteUndrained(this.d.way, op, c, pod, specContainer(pod, c.name)?.container);
      ctx.markOf(c, actStep(op, c, pod));
    }
    await enter(actStep(op, t, pod));
    // The preStop hooks, side by side; then Stopping is on record before any stop.
    const hooked = group.filter((c) => c.step === 'PreStop');
    const graces = new Map<ContainerTarget, number>();
    await Promise.all(hooked.map(async (c) => graces.set(c, await this.d.actions.preStop(op, c, pod, specContainer(pod, c.name)!.container))));
    if (hooked.length > 0) {
      for (const c of hooked) mark(c, 'Stopping');
      await ctx.save(false);
    }
    const stops = group.filter((c) => c.step === 'Stopping');
    const patches = group.filter((c) => c.step === 'Patching');
    for (const c of patches) await this.d.claims.pulledRecorded(op, c, pod);
    const [ns, name] = splitName(op.podName);
    const patched = patches.length > 0 ? this.d.actions.patchImages(ns, name, patches.map((c) => ({ container: c.name, image: c.newImage })), ctx.deadline).then(announce) : undefined;
    await Promise.all([...stops.map((c) => this.d.actions.stop(c, pod, graces.get(c) ?? op.request.graceSeconds, announce)), patched]);
    ctx.trace(`replaced together: ${group.map((c) => c.name).join(', ')}`);
    for (const c of group) mark(c, c.step === 'Patching' ? 'Patched' : 'Stopped');
  }
}
