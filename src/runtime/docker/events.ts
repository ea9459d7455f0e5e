// Container events from `GET /events`, resumed after a dropped connection from the last event seen.
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import type Dockerode from 'dockerode';
import { backoffDelay } from '../../backoff.js';
import type { RuntimeEvent } from '../types.js';
import { eventTime, eventType, type DockerEventMessage } from './convert.js';
import { sandboxResolver } from './pods.js';

/** What the event stream needs from the adapter. */
export interface EventSource {
  docker: Dockerode;
  /** Pod id of a container, '' when it cannot be told. Called for every event, in order. */
  podIdOf(containerId: string, action: RuntimeEvent['type']): Promise<string>;
  /** Reports a dropped stream before it is reopened. */
  onError?(err: unknown): void;
}

/**
 * The container events asked for: dockerd's create, start, die and destroy. Podman's Docker API (4.x) filters
 * by its own names, `died` and `remove` (it sends `die` as such, and `remove` where dockerd sends destroy);
 * dockerd ignores names it does not have.
 */
const EVENT_FILTER = ['create', 'start', 'die', 'died', 'destroy', 'remove'];

/** Back-off between reconnections, ms. */
const RECONNECT_BACKOFF = { initialMs: 200, maxMs: 5000 };

/**
 * Container create/start/die/destroy events from `sinceSeconds` on (Docker replays recent ones), until signal
 * aborts. A dropped stream is reopened from the last event seen, with backoff.
 */
export async function* dockerEvents(
  src: EventSource,
  signal: AbortSignal,
  sinceSeconds: number,
): AsyncGenerator<RuntimeEvent> {
  let since = sinceSeconds.toFixed(9);
  let lastNano = 0n;
  let seenAtLast = new Set<string>();
  let failures = 0;
  while (!signal.aborted) {
    let stream: Readable | undefined;
    try {
      stream = (await src.docker.getEvents({
        since,
        filters: { type: ['container'], event: EVENT_FILTER },
        abortSignal: signal,
      } as unknown as Dockerode.GetEventsOptions)) as Readable;
      failures = 0;
      for await (const line of createInterface({ input: stream, crlfDelay: Infinity })) {
        if (!line.trim()) continue;
        const msg = JSON.parse(line) as DockerEventMessage;
        const type = eventType(msg.Action ?? msg.status);
        const id = msg.Actor?.ID ?? msg.id;
        if (!type || !id) continue;
        // timeNano exceeds 2^53: read it exactly from the text to resume and de-duplicate.
        const nano = BigInt(/"timeNano":(\d+)/.exec(line)?.[1] ?? Math.floor((msg.time ?? 0) * 1e9));
        const key = `${id} ${type}`;
        if (nano < lastNano || (nano === lastNano && seenAtLast.has(key))) continue; // replayed after a reconnect
        if (nano > lastNano) seenAtLast = new Set();
        seenAtLast.add(key);
        lastNano = nano;
        since = `${nano / 1_000_000_000n}.${(nano % 1_000_000_000n).toString().padStart(9, '0')}`;
        yield { type, containerId: id, podId: await src.podIdOf(id, type), at: eventTime(msg) };
      }
    } catch (err) {
      if (signal.aborted) break;
      src.onError?.(err);
    } finally {
      stream?.destroy();
    }
    if (signal.aborted) break;
    await sleep(backoffDelay(++failures, RECONNECT_BACKOFF), undefined, { signal }).catch(() => undefined);
  }
}

/**
 * EventSource.podIdOf over a cache: every container's pod from one list at the first event, then a container
 * new since from resolve (its inspect); a destroyed container's pod is told once and forgotten.
 */
export function eventPodIds(
  listAll: () => Promise<Dockerode.ContainerInfo[]>,
  resolve: (containerId: string) => Promise<string>,
): EventSource['podIdOf'] {
  const podIds = new Map<string, string>();
  let primed: Promise<void> | undefined;
  const prime = async (): Promise<void> => {
    const list = await listAll();
    const sandboxOf = sandboxResolver(list);
    for (const c of list) if (!podIds.has(c.Id)) podIds.set(c.Id, sandboxOf(c));
  };
  return async (containerId, type) => {
    await (primed ??= prime());
    if (type === 'deleted') {
      const known = podIds.get(containerId) ?? '';
      podIds.delete(containerId);
      return known;
    }
    const known = podIds.get(containerId);
    if (known !== undefined) return known;
    try {
      const podId = await resolve(containerId);
      podIds.set(containerId, podId);
      return podId;
    } catch {
      return ''; // removed before we could look
    }
  };
}
