import assert from 'node:assert/strict';
import type { ElectionLease, LeaseApi, LeaseWatch } from '../../src/k8s/lease-election.js';
import { RolloutCoordinator } from '../../src/controllers/rollout/coordinator.js';
import type { RolloutApi } from '../../src/controllers/rollout/rollout-api.js';
import { ManualClock } from '../support/manual-timers.js';
import { memoryLogger } from '../support/memory-logger.js';

/** One Lease in memory with resourceVersions, shared by every node; a node cut off gets only failures. */
class LeaseStore {
  leases = new Map<string, ElectionLease>();
  private rv = 1;
  private listeners = new Set<() => void>();
  cut = new Set<string>();

  api(node: string): LeaseApi {
    const name = 'inplace-rollouts-slot-0';
    const check = () => {
      if (this.cut.has(node)) throw Object.assign(new Error('unreachable'), { code: undefined });
    };
    const conflict = () => Object.assign(new Error('conflict'), { code: 409 });
    const changed = () => setImmediate(() => this.listeners.forEach((l) => l()));
    return {
      name,
      get: async () => {
        check();
        return this.leases.get(name);
      },
      follow: (onLease): LeaseWatch => {
        const l = () => {
          if (!this.cut.has(node)) onLease(this.leases.get(name));
        };
        this.listeners.add(l);
        setImmediate(l);
        return { stop: async () => void this.listeners.delete(l) };
      },
      create: async (holder, durationSeconds, nowMs) => {
        check();
        if (this.leases.has(name)) throw conflict();
        const l = { name, holder, renewMs: nowMs, acquireMs: nowMs, durationSeconds, resourceVersion: String(this.rv++) };
        this.leases.set(name, l);
        changed();
        return l;
      },
      update: async (lease, holder, nowMs) => {
        check();
        const cur = this.leases.get(name);
        if (!cur) throw Object.assign(new Error('gone'), { code: 404 });
        if (cur.resourceVersion !== lease.resourceVersion) throw conflict();
        const l = { ...cur, holder, renewMs: nowMs, resourceVersion: String(this.rv++) };
        this.leases.set(name, l);
        changed();
        return l;
      },
      delete: async (lease) => {
        check();
        const cur = this.leases.get(name);
        if (cur && cur.resourceVersion !== lease.resourceVersion) return false;
        this.leases.delete(name);
        changed();
        return true;
      },
    };
  }
}

const noRollouts = { listRollouts: async () => [] } as unknown as RolloutApi;

describe('rollout coordinator election (LeaseElection on one Lease, fake API, manual clock)', () => {
  const LEASE_S = 15;
  const setup = () => {
    const clock = new ManualClock();
    const store = new LeaseStore();
    const { logger } = memoryLogger();
    const nodes = ['n1', 'n2', 'n3'].map((node) => new RolloutCoordinator(noRollouts, store.api(node), { node, holder: `${node}/id`, leaseNamespace: 'inplace-system', leaseSeconds: LEASE_S, resyncMs: 10_000, idleTickMs: 5000, retryMs: 1000 }, clock, logger));
    return { clock, store, nodes };
  };
  const leaders = (nodes: RolloutCoordinator[]) => nodes.filter((c) => c.leading()).length;

  it('one coordinator at a time; a coordinator cut off stops acting before another takes over, within the lease duration', async () => {
    const { clock, store, nodes } = setup();
    nodes.forEach((c) => c.start());
    for (let t = 0; t < 10_000; t += 100) {
      await clock.advance(100);
      assert.ok(leaders(nodes) <= 1, `at most one leader at ${t} ms`);
    }
    const first = nodes.findIndex((c) => c.leading());
    assert.ok(first >= 0, 'someone coordinates');
    store.cut.add(`n${first + 1}`);
    let handover = -1;
    for (let t = 0; t < 30_000; t += 100) {
      await clock.advance(100);
      assert.ok(leaders(nodes) <= 1, `at most one leader ${t} ms after the cut`);
      if (handover < 0 && nodes.some((c, i) => i !== first && c.leading())) handover = t;
    }
    assert.ok(handover > 0, 'another agent took over');
    assert.ok(handover <= LEASE_S * 1000, `took over ${handover} ms after the cut (lease ${LEASE_S} s)`);
    assert.equal(nodes[first].leading(), false);
    store.cut.clear();
    await Promise.all(nodes.map((c) => clock.until(c.stop(), 100)));
  });

  it('two agents with the same node name (a second agent, a test\'s) are never both the coordinator', async () => {
    const clock = new ManualClock();
    const store = new LeaseStore();
    const { logger } = memoryLogger();
    const twins = ['a', 'b'].map((id) => new RolloutCoordinator(noRollouts, store.api('n1'), { node: 'n1', holder: `n1/${id}`, leaseNamespace: 'inplace-system', leaseSeconds: LEASE_S, resyncMs: 10_000, idleTickMs: 5000, retryMs: 1000 }, clock, logger));
    twins.forEach((c) => c.start());
    for (let t = 0; t < 40_000; t += 100) {
      await clock.advance(100);
      assert.ok(leaders(twins) <= 1, `at most one leader at ${t} ms`);
    }
    assert.equal(leaders(twins), 1);
    await Promise.all(twins.map((c) => clock.until(c.stop(), 100)));
  });

  it('a coordinator that stops gives the Lease back: another takes over at once', async () => {
    const { clock, store, nodes } = setup();
    nodes.forEach((c) => c.start());
    await clock.advance(2000);
    const first = nodes.findIndex((c) => c.leading());
    assert.ok(first >= 0);
    await clock.until(nodes[first].stop(), 100);
    let t = 0;
    while (!nodes.some((c) => c.leading()) && t < 20_000) {
      await clock.advance(100);
      t += 100;
    }
    assert.ok(t <= 1000, `taken over ${t} ms after the release`);
    assert.equal(store.leases.size, 1);
    await Promise.all(nodes.filter((_, i) => i !== first).map((c) => clock.until(c.stop(), 100)));
  });
});
