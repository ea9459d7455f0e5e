// The requests waiting for their pod to reach this node, by pod: when the node's pod watch sees the pod arrive
// (or change), each request waiting for it is looked at again at once, instead of at its own next watch event.

/** Requests (by object key) waiting for pods (by namespace/name). */
export class WaitingRequests {
  private readonly byPod = new Map<string, Set<string>>();
  private readonly podOf = new Map<string, string>();

  /** Notes that request key waits for pod namespace/name (a request waits for one pod at a time). */
  add(key: string, namespace: string, pod: string): void {
    const p = `${namespace}/${pod}`;
    if (this.podOf.get(key) === p) return;
    this.remove(key);
    this.podOf.set(key, p);
    let set = this.byPod.get(p);
    if (!set) this.byPod.set(p, (set = new Set()));
    set.add(key);
  }

  /** Forgets request key. */
  remove(key: string): void {
    const p = this.podOf.get(key);
    if (p === undefined) return;
    this.podOf.delete(key);
    const set = this.byPod.get(p);
    set?.delete(key);
    if (set?.size === 0) this.byPod.delete(p);
  }

  /** The requests waiting for pod namespace/name, forgotten here (the caller looks at each again). */
  take(namespace: string, pod: string): string[] {
    const set = this.byPod.get(`${namespace}/${pod}`);
    if (!set) return [];
    const keys = [...set];
    for (const k of keys) this.remove(k);
    return keys;
  }
}
