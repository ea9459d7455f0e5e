// What the restart engine needs from the image service: make sure an image is in the runtime's store.
import type { AgentError } from '../errors.js';
import type { PullProgress } from '../runtime/types.js';

/** Result of ensuring an image is present. */
export interface EnsuredImage {
  ref: string;
  id: string;
  digest: string;
  /** False when the image was already present. */
  pulled: boolean;
}

/** Makes images present in the runtime's store (IfNotPresent semantics). */
export interface ImagePuller {
  ensure(ref: string, opts?: { signal?: AbortSignal; onProgress?: (p: PullProgress) => void }): Promise<EnsuredImage>;
  /**
   * Begins looking for ref in the store (a read; nothing is pulled) for an ensure() of it that follows shortly,
   * so that the look is off that ensure's path.
   */
  lookAhead?(ref: string): void;
  /**
   * Whether the look lookAhead() began for ref (within its time) found the image present, without taking the look
   * from the ensure() it is for; undefined when no such look is under way.
   */
  present?(ref: string): Promise<boolean> | undefined;
}

/**
 * A failed ensure() rejects with an AgentError whose message begins `pull of IMAGE` (the pull service words it so).
 * What went wrong in a failed pull, in a few words and without the image's name (the caller's sentence names
 * it once): "not found in its registry", "the registry requires credentials and none were given for it",
 * else the message without its leading "pull of IMAGE".
 */
export function pullFailureCause(err: AgentError, image: string): string {
  if (err.kind === 'NotFound') return 'not found in its registry';
  const rest = err.message.startsWith(`pull of ${image}`) ? err.message.slice(`pull of ${image}`.length).replace(/^:? /, '') : err.message;
  // The classified forms end with the runtime's own words in parentheses, which repeat the image.
  if (err.kind === 'Unauthenticated') return rest.replace(/ \(.*\)$/s, '');
  return rest;
}
