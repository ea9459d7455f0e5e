// Keeping a pull slot while the pull runs: the slot's Lease is renewed every third of its duration, on the
// injected clock, at fixed times from when the slot was taken (a renewal that takes long skips the turns it
// overran, never two at once). A renewal that finds the Lease taken (it expired and another node took it)
// ends the renewals, and the pull goes on; one that fails is tried again at the next turn.
import type { Clock } from '../../clock.js';
import { asAgentError } from '../../errors.js';
import type { Logger } from '../../log.js';
import type { SlotLease } from './fleet-api.js';
import type { SlotClaimer } from './slots.js';

/** Shortest time between two renewals, ms (a lease of under 3 s is still renewed at most once a second). */
const MIN_RENEW_EVERY_MS = 1000;

/** A held slot: the lease as last renewed (undefined once lost), and the renewal under way. */
export interface SlotHold {
  lease: SlotLease | undefined;
  renewing?: Promise<void>;
}

/** What the renewals need. */
export interface SlotRenewalDeps {
  slots: Pick<SlotClaimer, 'renew'>;
  clock: Clock;
  log: Logger;
  /** The lease's duration, s. */
  leaseSeconds: number;
}

/** Renewals under way: stop() ends them (a renewal already sent still lands in hold); done settles after. */
export interface SlotRenewal {
  stop(): void;
  done: Promise<void>;
}

/** Renews hold.lease every leaseSeconds/3 (at least MIN_RENEW_EVERY_MS) from now until stop() or the lease is lost. */
export function renewWhilePulling(d: SlotRenewalDeps, prewarm: string, hold: SlotHold): SlotRenewal {
  const every = Math.max(MIN_RENEW_EVERY_MS, (d.leaseSeconds * 1000) / 3);
  const stopping = new AbortController();
  const loop = async () => {
    let next = d.clock.now() + every;
    for (;;) {
      await d.clock.sleep(Math.max(0, next - d.clock.now()), stopping.signal);
      const cur = hold.lease;
      if (!cur) return;
      hold.renewing = d.slots.renew(cur).then(
        (l) => {
          if (!l) d.log.warn('prewarm slot lost while pulling (lease expired and taken); the pull goes on', { prewarm, slot: cur.name });
          hold.lease = l;
        },
        (err: unknown) => {
          d.log.warn('prewarm slot renewal failed', { prewarm, error: asAgentError(err).message });
        },
      );
      await hold.renewing;
      hold.renewing = undefined;
      if (!hold.lease) return;
      const now = d.clock.now();
      while (next <= now) next += every;
    }
  };
  // Rejects only when stopped during a sleep.
  const done = loop().catch(() => undefined);
  return { stop: () => stopping.abort(), done };
}
