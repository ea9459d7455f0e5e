// Container events from a CRI runtime: the GetContainerEvents stream where the runtime has it (containerd
// 1.7+), otherwise (containerd 1.6 answers UNIMPLEMENTED) a poll of ListContainers that reports the
// differences between two snapshots as events.
import { status as Status } from '@grpc/grpc-js';
import { systemClock, type Clock } from '../../clock.js';
import { AgentError } from '../../errors.js';
import type { Container__Output } from '../../gen/runtime/v1/Container.js';
import type { ContainerState, RuntimeEvent } from '../types.js';
import type { CriClient } from './client.js';
import { isServiceError } from './errors.js';
import { nanosToDateOrEpoch, toContainerState, toRuntimeEvent } from './convert.js';

/** How events are obtained. */
export interface EventOptions {
  clock?: Clock;
  /** Interval of the ListContainers poll, ms. */
  pollIntervalMs?: number;
  /** Skip the stream and poll right away. */
  forcePoll?: boolean;
}

/** Default interval of the fallback poll, ms. */
export const DEFAULT_POLL_INTERVAL_MS = 1000;

/** Container events until the signal aborts. Throws AgentError when the runtime fails. */
export async function* criEvents(client: CriClient, signal: AbortSignal, opts: EventOptions = {}): AsyncGenerator<RuntimeEvent> {
  if (!opts.forcePoll) {
    try {
      for await (const ev of client.containerEvents(signal)) {
        const out = toRuntimeEvent(ev);
        if (out) yield out;
      }
      return;
    } catch (err) {
      if (!isUnimplemented(err)) throw err;
    }
  }
  yield* pollEvents(client, signal, opts.clock ?? systemClock, opts.pollIntervalMs ?? DEFAULT_POLL_INTERVAL_MS);
}

function isUnimplemented(err: unknown): boolean {
  return AgentError.is(err) && isServiceError(err.cause) && err.cause.code === Status.UNIMPLEMENTED;
}

/** What the poll remembers of a container. */
interface Seen {
  state: ContainerState;
  podId: string;
}

/** Lifecycle order; an event is emitted for every step a container passed between two polls. */
const STEPS: { state: ContainerState; event: RuntimeEvent['type'] }[] = [
  { state: 'created', event: 'created' },
  { state: 'running', event: 'started' },
  { state: 'exited', event: 'stopped' },
];

const rank = (s: ContainerState) => STEPS.findIndex((x) => x.state === s);

/**
 * The events that turn snapshot `prev` into `cur`. A container seen for the first time gets every step up to
 * its state (created, then started if it runs or ran); one that vanished gets `deleted`, after `stopped`
 * when it was last seen running.
 */
export function diffSnapshots(prev: Map<string, Seen>, cur: Container__Output[], at: Date): RuntimeEvent[] {
  const out: RuntimeEvent[] = [];
  const ids = new Set<string>();
  for (const c of cur) {
    ids.add(c.id);
    const state = toContainerState(c.state);
    const to = rank(state);
    if (to < 0) continue;
    const before = prev.get(c.id);
    const from = before ? rank(before.state) : -1;
    for (let i = from + 1; i <= to; i++) {
      const when = STEPS[i].event === 'created' ? nanosToDateOrEpoch(c.createdAt) : at;
      out.push({ type: STEPS[i].event, containerId: c.id, podId: c.podSandboxId, at: when });
    }
  }
  for (const [id, seen] of prev) {
    if (ids.has(id)) continue;
    // Stopped and removed between two polls: it must have stopped first.
    if (seen.state === 'running') out.push({ type: 'stopped', containerId: id, podId: seen.podId, at });
    out.push({ type: 'deleted', containerId: id, podId: seen.podId, at });
  }
  return out;
}

/** The snapshot to remember of a container list; a container in an unknown state keeps its last state. */
export function snapshotOf(prev: Map<string, Seen>, cur: Container__Output[]): Map<string, Seen> {
  const next = new Map<string, Seen>();
  for (const c of cur) {
    const state = toContainerState(c.state);
    next.set(c.id, { state: rank(state) < 0 ? (prev.get(c.id)?.state ?? state) : state, podId: c.podSandboxId });
  }
  return next;
}

async function* pollEvents(client: CriClient, signal: AbortSignal, clock: Clock, intervalMs: number): AsyncGenerator<RuntimeEvent> {
  let prev: Map<string, Seen> | undefined;
  while (!signal.aborted) {
    let list: Container__Output[];
    try {
      list = (await client.listContainers({}, { signal })).containers;
    } catch (err) {
      if (signal.aborted) return;
      throw err;
    }
    if (prev) yield* diffSnapshots(prev, list, new Date(clock.now()));
    prev = snapshotOf(prev ?? new Map(), list);
    try {
      await clock.sleep(intervalMs, signal);
    } catch {
      return;
    }
  }
}
