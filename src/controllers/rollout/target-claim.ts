// Which InPlaceRollout a workload belongs to when several name it. Two rollouts on one workload would each spend
// the whole budget and race each other's ContainerRestarts, so exactly one acts: the oldest (creation time,
// then name), which every coordinator works out the same way from the list alone. A rollout being deleted
// gives its workload up at once.
import type { InPlaceRollout } from './types.js';

const created = (r: InPlaceRollout): number => {
  const t = r.metadata.creationTimestamp;
  return t === undefined ? Number.MAX_SAFE_INTEGER : new Date(t).getTime();
};

const sameTarget = (a: InPlaceRollout, b: InPlaceRollout): boolean =>
  (a.metadata.namespace ?? 'default') === (b.metadata.namespace ?? 'default') && a.spec.targetRef.kind === b.spec.targetRef.kind && a.spec.targetRef.name === b.spec.targetRef.name;

/** The rollout that holds r's workload among all rollouts (r itself, or an older one naming the same workload). */
export function targetHolder(r: InPlaceRollout, all: InPlaceRollout[]): InPlaceRollout {
  const rivals = all.filter((o) => !o.metadata.deletionTimestamp && sameTarget(o, r));
  if (r.metadata.deletionTimestamp) return r;
  return [...rivals, r].reduce((best, o) => {
    const d = created(o) - created(best);
    return d < 0 || (d === 0 && o.metadata.name < best.metadata.name) ? o : best;
  }, r);
}
