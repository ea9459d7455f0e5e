// Pull slots across the cluster: slot i of a prewarm is the Lease `<prewarm>-slot-<i>`, i < maxParallelNodes.
// A node gets one (created, handed to it, or a free or expired one taken), renews it while pulling, and then
// hands it on to its successor (slot-chain.ts) or deletes it. A node that dies stops renewing, and the slot is
// free again once its lease has expired. Optimistic concurrency (create fails with 409 when taken; replace
// fails with 409 when someone else wrote first) decides races.
import { isConflict } from '../../k8s/api-error.js';
import type { Clock } from '../../clock.js';
import { httpStatus, type FleetApi, type SlotLease } from './fleet-api.js';
import { rankKey } from './node-order.js';

/** Slots a node tries to write in one attempt (those the list showed free); lost races beyond that wait for the next poll. */
const MAX_TRIES = 3;

/** The Lease name of slot i. */
export function slotName(prewarm: string, i: number): string {
  return `${prewarm}-slot-${i}`;
}

/** The slot number in a slot Lease's name (MAX_SAFE_INTEGER when it is not one of the prewarm's). */
export function slotIndex(prewarm: string, name: string): number {
  const m = name.startsWith(prewarm) ? name.slice(prewarm.length).match(/^-slot-(\d+)$/) : null;
  return m ? Number(m[1]) : Number.MAX_SAFE_INTEGER;
}

/** True when nobody holds the lease any more: released, or not renewed within its duration. */
export function slotFree(l: SlotLease, nowMs: number): boolean {
  return l.holder === '' || l.renewMs + l.durationSeconds * 1000 < nowMs;
}

/** Takes, renews and releases one node's slots. */
export class SlotClaimer {
  constructor(
    private readonly api: FleetApi,
    private readonly namespace: string,
    /** The holder identity: the node name. */
    private readonly holder: string,
    private readonly durationSeconds: number,
    private readonly clock: Clock,
  ) {}

  /**
   * Takes a slot of the prewarm: one this node already holds (an agent restarted mid-pull), else a free or
   * expired one, looking from `prefer` (its home slot) or an offset of its own. Undefined when none could be
   * had. One list request (none when the slots as seen through a watch are given: then one write at most), plus
   * one write per slot tried (at most three).
   */
  async tryAcquire(prewarm: string, maxParallel: number, seen?: SlotLease[], prefer?: number): Promise<SlotLease | undefined> {
    const now = this.clock.now();
    const leases = seen ?? (await this.api.listSlots(this.namespace, prewarm));
    const mine = leases.find((l) => l.holder === this.holder && slotIndex(prewarm, l.name) < maxParallel);
    if (mine) return this.renew(mine);
    const byName = new Map(leases.map((l) => [l.name, l]));
    // Nodes that read the slots at about the same time mostly try different ones.
    const offset = prefer ?? Number(rankKey(prewarm, this.holder) % BigInt(maxParallel));
    const maxTries = seen ? 1 : MAX_TRIES;
    let tries = 0;
    for (let k = 0; k < maxParallel && tries < maxTries; k++) {
      const i = (offset + k) % maxParallel;
      const name = slotName(prewarm, i);
      const l = byName.get(name);
      if (l && !slotFree(l, now)) continue;
      tries++;
      try {
        return l ? await this.api.updateSlot(this.namespace, l, this.holder, now) : await this.api.createSlot(this.namespace, prewarm, name, this.holder, this.durationSeconds, now);
      } catch (err) {
        if (isConflict(err)) continue; // another node was first
        throw err;
      }
    }
    return undefined;
  }

  /** Creates slot i held by this node: one write, no read. Undefined when it exists (409). */
  async createHome(prewarm: string, i: number): Promise<SlotLease | undefined> {
    try {
      return await this.api.createSlot(this.namespace, prewarm, slotName(prewarm, i), this.holder, this.durationSeconds, this.clock.now());
    } catch (err) {
      if (isConflict(err)) return undefined;
      throw err;
    }
  }

  /**
   * Takes a slot handed to this node (its Lease names it): as it is when it was written within the last third
   * of its duration (no request: nobody may take a Lease before it expires), else renewed first. Undefined
   * when it was taken meanwhile.
   */
  async takeHanded(l: SlotLease): Promise<SlotLease | undefined> {
    if (l.holder !== this.holder) return undefined;
    if (this.clock.now() - l.renewMs < (l.durationSeconds * 1000) / 3) return l;
    return this.renew(l);
  }

  /**
   * Hands a held slot on to node next: one write of the Lease (holder, turn label, renewal time). False when
   * the Lease moved on meanwhile (it expired and was taken, or is gone): then there is nothing to hand on.
   */
  async handOn(l: SlotLease, next: string): Promise<boolean> {
    try {
      await this.api.updateSlot(this.namespace, l, next, this.clock.now());
      return true;
    } catch (err) {
      if (isConflict(err) || httpStatus(err) === 404) return false;
      throw err;
    }
  }

  /** Renews a held slot. Undefined when it was lost (someone took it after it expired). */
  async renew(l: SlotLease): Promise<SlotLease | undefined> {
    try {
      return await this.api.updateSlot(this.namespace, l, this.holder, this.clock.now());
    } catch (err) {
      if (!isConflict(err) && httpStatus(err) !== 404) throw err;
      const now = (await this.api.listSlots(this.namespace, l.prewarm)).find((x) => x.name === l.name);
      if (now && now.holder === this.holder) return this.renew(now);
      return undefined;
    }
  }

  /** Gives the slot back: deletes the Lease if this node still holds it (read again when it moved on). */
  async release(l: SlotLease): Promise<void> {
    for (let lease: SlotLease | undefined = l, i = 0; lease && i < 3; i++) {
      if (await this.api.deleteSlot(this.namespace, lease)) return;
      lease = (await this.api.listSlots(this.namespace, l.prewarm)).find((x) => x.name === l.name && x.holder === this.holder);
    }
  }
}
