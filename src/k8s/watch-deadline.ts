// A deadline on every watch request: the API server is asked to end the watch after timeoutSeconds (as
// client-go's reflectors ask), so a healthy watch sends an event or ends within that. One that has done neither
// for timeoutSeconds plus a grace is a silent stream (a wedged server, a connection gone quiet without a reset),
// and is ended with DeadlineExceeded, so the follower lists and watches again instead of keeping a stale cache
// for ever. The same deadline covers the wait for the answer's headers, which the client library makes with none.
import { AgentError } from '../errors.js';
import type { Clock } from '../clock.js';
import type { Watch } from './client.js';

/** The watch requests a follower makes: the client's Watch, or a unit test's fake. */
export type WatchSource = Pick<Watch, 'watch'>;

/** Watch timing. */
export interface WatchDeadline {
  /** Asked of the API server (timeoutSeconds); it ends the watch by then, and the follower watches again. */
  timeoutSeconds: number;
  /** Beyond timeoutSeconds: the silence after which the watch is ended here, ms. */
  graceMs: number;
}

/** The defaults: 5 minutes asked of the server (client-go's reflectors ask 5-10), 30 s of grace. */
export const DEFAULT_WATCH_DEADLINE: WatchDeadline = { timeoutSeconds: 300, graceMs: 30_000 };

/**
 * inner's watches with the deadline: timeoutSeconds added to each request, and a request silent (no event, no
 * end, not even its answer) for timeoutSeconds + graceMs aborted and ended with a DeadlineExceeded that names
 * its path. Each event restarts the count. The controller returned is this one's: aborting it aborts the request.
 */
export function watchWithDeadline(inner: WatchSource, clock: Clock, deadline: WatchDeadline = DEFAULT_WATCH_DEADLINE): WatchSource {
  const silenceMs = deadline.timeoutSeconds * 1000 + deadline.graceMs;
  return {
    watch(path, params, callback, done) {
      const outer = new AbortController();
      let ended = false;
      let inflight: AbortController | undefined;
      let timer: AbortController | undefined;
      const end = (err: unknown) => {
        if (ended) return;
        ended = true;
        timer?.abort();
        inflight?.abort();
        done(err);
      };
      const arm = () => {
        timer?.abort();
        timer = new AbortController();
        clock.sleep(silenceMs, timer.signal).then(
          () => end(new AgentError('DeadlineExceeded', `watch of ${path}: nothing from the API server for ${silenceMs / 1000}s (asked to end it after ${deadline.timeoutSeconds}s)`)),
          () => undefined, // re-armed, or ended
        );
      };
      outer.signal.addEventListener('abort', () => {
        timer?.abort();
        inflight?.abort();
      });
      arm();
      inner
        .watch(
          path,
          { ...params, timeoutSeconds: deadline.timeoutSeconds },
          (type, obj, raw) => {
            if (ended) return;
            arm();
            callback(type, obj, raw);
          },
          end,
        )
        .then(
          (ctrl) => {
            inflight = ctrl;
            if (ended || outer.signal.aborted) ctrl.abort();
          },
          end,
        );
      return Promise.resolve(outer);
    },
  };
}
