// PullImages: pulls images through the node's pull service and streams their progress.
import type * as grpc from '@grpc/grpc-js';
import type { PullImagesRequest__Output } from '../../gen/inplace/v1/PullImagesRequest.js';
import type { PullImagesEvent } from '../../gen/inplace/v1/PullImagesEvent.js';
import type { AuthKeyring, PullService } from '../../pull/types.js';
import { pullEventToWire } from '../convert.js';
import { toServiceError } from '../status.js';
import { validatePull } from '../validate.js';

/** Handler factory for PullImages; parseKeyring turns the request's config.json text into credentials. */
export function pullImagesHandler(
  pulls: PullService,
  parseKeyring: (json: string) => AuthKeyring,
): grpc.handleServerStreamingCall<PullImagesRequest__Output, PullImagesEvent> {
  return (call) => {
    const abort = new AbortController();
    call.on('cancelled', () => abort.abort(new Error('caller went away')));
    const req = call.request;
    Promise.resolve()
      .then(() => validatePull(req))
      .then(() =>
        pulls.pull(
          {
            images: req.images,
            parallel: req.parallel,
            timeoutMs: Number(req.timeoutMs),
            keyring: req.authConfigJson ? parseKeyring(req.authConfigJson) : undefined,
            pin: req.pin,
            always: req.always,
          },
          (e) => {
            if (!abort.signal.aborted) call.write(pullEventToWire(e));
          },
          abort.signal,
        ),
      )
      .then(
        () => call.end(),
        // On a server stream, destroy() sends no status: emitting the error does.
        (err: unknown) => call.emit('error', toServiceError(err)),
      );
  };
}
