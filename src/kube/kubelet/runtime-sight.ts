// The first sight of the kubelet's new instance of a container, in the node's runtime: the agent reads the
// runtime directly, so it sees the instance the moment the kubelet creates it, while the API server's status shows
// it only after the kubelet's next relist (about 1 s later). The readiness gate opened at that sight is already True
// when the kubelet's first sync after the start computes the pod's Ready, so the readiness probe's success flips
// Ready at once (docs/kubernetes.md, "The gate at the start").
//
// Why that is safe: the instance seen is one the kubelet created after it stopped the old one (an id not among
// `notIds`, in state created or running; the kubelet keeps a dead instance of each container, which is exited).
// The kubelet computes a pod sync's status before that sync's kills and starts, and the next sync waits for a relist
// newer than the previous sync's end, which shows the new instance. So no status that still holds the old instance
// is computed after the gate opens, and the new instance is not ready until its own probe passes (or, without a
// probe, until it runs: the stock rule).
import type { Clock } from '../../clock.js';
import type { Runtime } from '../../runtime/runtime.js';

/** How often the runtime is listed while waiting for the new instance, ms. */
export const SIGHT_POLL_MS = 20;

/** A wait for the new instance in the runtime; stop() ends it (its promise then settles false). */
export interface Sighting {
  /** True once the new instance was seen (and `seen` was called); false when stopped first or the runtime failed. */
  done: Promise<boolean>;
  stop(): void;
}

/**
 * Lists pod `podId`'s containers every SIGHT_POLL_MS until one named `name`, not in `notIds`, is created or running,
 * then calls `seen` once. A failing list ends the wait quietly (false): the API server's view still opens the gate.
 */
export function sightNewInstance(runtime: Pick<Runtime, 'listContainers'>, clock: Clock, podId: string, name: string, notIds: readonly string[], seen: () => void): Sighting {
  const ac = new AbortController();
  const done = (async () => {
    while (!ac.signal.aborted) {
      let found = false;
      try {
        const list = await runtime.listContainers({ podId, brief: true });
        found = list.some((c) => c.name === name && !notIds.includes(c.id) && (c.state === 'created' || c.state === 'running'));
      } catch {
        return false;
      }
      if (ac.signal.aborted) return false;
      if (found) {
        seen();
        return true;
      }
      await clock.sleep(SIGHT_POLL_MS, ac.signal).catch(() => undefined);
    }
    return false;
  })();
  return { done, stop: () => ac.abort() };
}

/** fn, called at most once however often the result is called. */
export function once(fn: () => void): () => void {
  let called = false;
  return () => {
    if (called) return;
    called = true;
    fn();
  };
}

/** Sightings of several containers' new instances; all() is called once every one was seen (here or by seen()). */
export interface GroupSighting {
  /** Says that container `name`'s new instance was seen another way (the API server's status). */
  seen(name: string): void;
  stop(): void;
}

/**
 * Waits for the new instance of each of `targets` (containers replaced together) in the runtime, and calls `all`
 * once every one of them was seen: the gate may open only when none of them still runs its old instance.
 */
export function sightAll(runtime: Pick<Runtime, 'listContainers'>, clock: Clock, podId: string, targets: readonly { name: string; oldId: string }[], all: () => void): GroupSighting {
  const left = new Set(targets.map((t) => t.name));
  const seen = (name: string) => {
    if (left.delete(name) && left.size === 0) all();
  };
  const sights = targets.map((t) => sightNewInstance(runtime, clock, podId, t.name, [t.oldId], () => seen(t.name)));
  return { seen, stop: () => sights.forEach((s) => s.stop()) };
}
