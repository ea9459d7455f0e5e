// The one rule of a Kubernetes-style condition's lastTransitionTime, for every status the agent computes (the
// ContainerRestart's, the InPlaceRollout's, the SidecarSet's): it moves only when the condition's status changes.

/** A Kubernetes-style condition; the rule reads its type, status and lastTransitionTime. */
export interface TimedCondition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
  lastTransitionTime?: string;
}

/** next, with prev's condition of its type's lastTransitionTime while the status stays the same, else `now`. */
export function keepTransition<C extends TimedCondition>(prev: readonly C[] | undefined, next: Omit<C, 'lastTransitionTime'>, now: string): C {
  const old = prev?.find((c) => c.type === next.type);
  const lastTransitionTime = old && old.status === next.status && old.lastTransitionTime ? old.lastTransitionTime : now;
  return { ...next, lastTransitionTime } as C;
}
