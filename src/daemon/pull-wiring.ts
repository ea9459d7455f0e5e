// Builds the node's pull service for the daemon.
import type { Registry } from 'prom-client';
import type { Clock } from '../clock.js';
import type { Logger } from '../log.js';
import { DirectPuller } from '../engine/image-puller.js';
import type { Runtime } from '../runtime/runtime.js';
import type { AuthKeyring, PullEvent, PullRequest, PullService } from '../pull/types.js';
import { asAgentError } from '../errors.js';
import type { DaemonOptions } from './options.js';

/** The pull service and the parser of config.json credentials it takes. */
export function createPullService(
  runtime: Runtime,
  _opts: DaemonOptions,
  _registry: Registry,
  _log: Logger,
  clock: Clock,
): { pulls: PullService; parseKeyring: (json: string) => AuthKeyring } {
  const direct = new DirectPuller(runtime);
  const pulls: PullService = {
    ensure: (ref, o) => direct.ensure(ref, o),
    async pull(req: PullRequest, onEvent: (e: PullEvent) => void, signal?: AbortSignal) {
      const out: PullEvent[] = [];
      for (const image of req.images) {
        const start = clock.now();
        const base: PullEvent = { image, phase: 'Pulling', queuePosition: 0, bytesDone: 0, bytesTotal: 0, layers: [], digest: '', imageId: '', error: '', errorKind: '', attempt: 1, elapsedMs: 0, pinned: false, alreadyPresent: false };
        onEvent(base);
        try {
          const got = await direct.ensure(image, { signal });
          const e: PullEvent = { ...base, phase: 'Done', digest: got.digest, imageId: got.id, alreadyPresent: !got.pulled, elapsedMs: clock.now() - start };
          onEvent(e);
          out.push(e);
        } catch (err) {
          const ae = asAgentError(err);
          const e: PullEvent = { ...base, phase: 'Failed', error: ae.message, errorKind: ae.kind, elapsedMs: clock.now() - start };
          onEvent(e);
          out.push(e);
        }
      }
      return out;
    },
  };
  return { pulls, parseKeyring: () => new Map() };
}
