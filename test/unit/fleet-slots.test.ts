// The slot Lease steps of the hand-on order (slots.ts), on an in-memory Lease store with the API server's
// optimistic concurrency: a create of an existing Lease and a write or delete at a stale resourceVersion get 409.
import assert from 'node:assert/strict';
import type { FleetApi, SlotLease } from '../../src/controllers/image-prewarm/fleet-api.js';
import { SlotClaimer } from '../../src/controllers/image-prewarm/slots.js';
import { ManualClock } from '../support/manual-timers.js';

const conflict = () => Object.assign(new Error('conflict'), { code: 409 });

/** Leases in memory, and every request made, by method. */
function leaseStore() {
  const leases = new Map<string, SlotLease>();
  const calls: string[] = [];
  let rv = 0;
  const put = (l: Omit<SlotLease, 'resourceVersion'>): SlotLease => {
    const stored = { ...l, resourceVersion: String(++rv) };
    leases.set(l.name, stored);
    return { ...stored };
  };
  const api = {
    listSlots: (_ns: string, prewarm: string) => {
      calls.push('listSlots');
      return Promise.resolve([...leases.values()].filter((l) => l.prewarm === prewarm).map((l) => ({ ...l })));
    },
    createSlot: (_ns: string, prewarm: string, name: string, holder: string, durationSeconds: number, nowMs: number) => {
      calls.push('createSlot');
      if (leases.has(name)) return Promise.reject(conflict());
      return Promise.resolve(put({ name, prewarm, holder, renewMs: nowMs, acquireMs: nowMs, durationSeconds }));
    },
    updateSlot: (_ns: string, l: SlotLease, holder: string, nowMs: number) => {
      calls.push('updateSlot');
      const cur = leases.get(l.name);
      if (!cur || cur.resourceVersion !== l.resourceVersion) return Promise.reject(conflict());
      return Promise.resolve(put({ ...cur, holder, renewMs: nowMs, acquireMs: holder === cur.holder ? cur.acquireMs : nowMs }));
    },
    deleteSlot: (_ns: string, l: SlotLease) => {
      calls.push('deleteSlot');
      const cur = leases.get(l.name);
      if (cur && cur.resourceVersion !== l.resourceVersion) return Promise.resolve(false);
      leases.delete(l.name);
      return Promise.resolve(true);
    },
  } as unknown as FleetApi;
  return { api, leases, calls };
}

describe('fleet pre-warm: slots handed on along the order (SlotClaimer)', () => {
  it('a node hands its slot on to its successor in one write, and the successor pulls with no request of its own', async () => {
    const clock = new ManualClock();
    const { api, leases, calls } = leaseStore();
    const n1 = new SlotClaimer(api, 'ns', 'n1', 15, clock);
    const n4 = new SlotClaimer(api, 'ns', 'n4', 15, clock);
    const held = await n1.createHome('web', 0);
    assert.equal(held?.holder, 'n1');
    assert.equal(await n1.handOn(held!, 'n4'), true);
    assert.deepEqual(calls, ['createSlot', 'updateSlot']);
    const handed = leases.get('web-slot-0')!;
    assert.equal(handed.holder, 'n4');
    await clock.advance(4_000);
    assert.equal(await n4.takeHanded(handed), handed, 'written 4 s ago: nobody may take it for 11 s more, so no renewal');
    assert.deepEqual(calls, ['createSlot', 'updateSlot'], 'taking it cost nothing');
  });

  it('a handed slot seen late is renewed first; one taken meanwhile (it expired) is not used', async () => {
    const clock = new ManualClock();
    const { api, leases, calls } = leaseStore();
    const n1 = new SlotClaimer(api, 'ns', 'n1', 15, clock);
    await n1.handOn((await n1.createHome('web', 0))!, 'n4');
    const handed = { ...leases.get('web-slot-0')! };
    await clock.advance(6_000);
    const n4 = new SlotClaimer(api, 'ns', 'n4', 15, clock);
    const taken = await n4.takeHanded(handed);
    assert.equal(taken?.renewMs, clock.now(), 'past a third of the lease: renewed before the pull');
    assert.equal(calls.at(-1), 'updateSlot');

    await clock.advance(20_000); // expired: another node takes it
    const n7 = new SlotClaimer(api, 'ns', 'n7', 15, clock);
    assert.equal((await n7.tryAcquire('web', 1))?.holder, 'n7');
    assert.equal(await n4.takeHanded(taken!), undefined, 'n4 saw its old version: its renewal gets 409, and the list shows n7');
    assert.equal(await n4.handOn(taken!, 'n10'), false, 'and it cannot hand on what it no longer holds');
    assert.equal(leases.get('web-slot-0')!.holder, 'n7');
  });

  it('a slot handed to another node is never taken as handed; a home slot that exists is not created over', async () => {
    const clock = new ManualClock();
    const { api } = leaseStore();
    const n1 = new SlotClaimer(api, 'ns', 'n1', 15, clock);
    const n2 = new SlotClaimer(api, 'ns', 'n2', 15, clock);
    const l = (await n1.createHome('web', 0))!;
    assert.equal(await n2.takeHanded(l), undefined);
    assert.equal(await n2.createHome('web', 0), undefined, '409: n2 goes to the fallback');
  });
});
