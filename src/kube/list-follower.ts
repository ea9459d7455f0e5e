// A list-then-watch of one kind of object that keeps itself alive: the client's ListWatch re-lists on 410 Gone
// by itself, and every other failure ends it; this starts it again after a growing delay (one pending restart
// at a time, however many ways the failure was reported). The caller hears of the objects only after a list
// that succeeded and on each change after it, never an empty list made up from a failed one. An answer that
// will not change by retrying soon (403: not permitted; 404: the resource is not served, e.g. its CRD is not
// installed) is retried at a long interval instead.
import { ListWatch, Watch, type KubeConfig, type KubernetesListObject, type KubernetesObject } from './client.js';
import { Backoff } from '../pull/backoff.js';
import { apiStatusCode } from './api-error.js';
import { systemClock } from '../clock.js';

/** Why the follow failed, and when it is tried again. */
export interface FollowFailure {
  error: unknown;
  /** The HTTP status, 0 when the failure was not an HTTP answer. */
  status: number;
  /** 403 or 404: retrying soon will not help (permissions or an absent CRD). */
  denied: boolean;
  /** Consecutive failures, this one included. */
  failures: number;
  retryInMs: number;
}

/** Timing of the restarts. */
export interface ListFollowerOptions {
  initialBackoffMs?: number;
  maxBackoffMs?: number;
  /** Delay before trying again after a 403 or 404 (default 5 min). */
  deniedRetryMs?: number;
  /** Only the objects with these labels (the list function must select the same). */
  labelSelector?: string;
}

/** A running follow. */
export interface ListFollower {
  stop(): Promise<void>;
}

/**
 * Lists the objects at path with list(), then watches them; onList gets every object after each successful
 * list and each change; onError gets each failure with its retry delay.
 */
export function followList<T extends KubernetesObject>(
  kc: KubeConfig,
  path: string,
  list: () => Promise<KubernetesListObject<T>>,
  onList: (items: T[]) => void,
  onError: (f: FollowFailure) => void,
  opts: ListFollowerOptions = {},
): ListFollower {
  const backoff = new Backoff(systemClock, { initialMs: opts.initialBackoffMs ?? 1000, maxMs: opts.maxBackoffMs ?? 30_000 });
  const deniedMs = opts.deniedRetryMs ?? 5 * 60_000;
  let stopped = false;
  let failures = 0;
  let timer: NodeJS.Timeout | undefined;
  // The list answered (set by the list function), and start() has ended since: only then is the informer's
  // cache the server's view, so the caller is not handed it item by item while the first list is taken in.
  let answered = false;
  let listed = false;
  const informer = new ListWatch<T>(
    path,
    new Watch(kc),
    async () => {
      const r = await list();
      answered = true;
      failures = 0;
      return r;
    },
    false,
    opts.labelSelector,
  );
  const emit = () => {
    if (listed && !stopped) onList([...informer.list()]);
  };
  const restartLater = (error: unknown) => {
    if (stopped || timer) return;
    listed = answered = false;
    failures++;
    const status = apiStatusCode(error) ?? 0;
    const denied = status === 403 || status === 404;
    const retryInMs = denied ? deniedMs : backoff.delay(failures);
    onError({ error, status, denied, failures, retryInMs });
    timer = setTimeout(() => {
      timer = undefined;
      void informer.stop().then(run);
    }, retryInMs);
    timer.unref();
  };
  const run = () => {
    if (stopped) return;
    informer.start().then(
      // A failed list is reported through 'error' and still ends start() normally.
      () => {
        if (timer || !answered) return;
        listed = true;
        emit();
      },
      restartLater,
    );
  };
  for (const verb of ['add', 'update', 'delete'] as const) informer.on(verb, emit);
  informer.on('error', restartLater);
  run();
  return {
    stop: async () => {
      stopped = true;
      clearTimeout(timer);
      await informer.stop();
    },
  };
}
