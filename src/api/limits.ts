// The largest inputs the agent takes, from the real limits of what they name. The API edge refuses anything
// beyond them before any work is done (see validate.ts).
import { MAX_TIMER_MS } from '../duration.js';

/** Longest timer Node.js can take, ms (~596 h): the bound of every duration a caller gives. */
export const MAX_DURATION_MS = MAX_TIMER_MS;
/** Longest grace period, s (the same ~596 h). */
export const MAX_GRACE_SECONDS = Math.floor(MAX_DURATION_MS / 1000);
/** A pod as given: NAMESPACE (DNS label, 63) + '/' + NAME (DNS subdomain, 253); a sandbox id is 64. */
export const MAX_POD_ARG = 63 + 1 + 253;
/** An image reference: name 255, ':' tag 128, '@' digest (sha512 in hex: 7 + 128). */
export const MAX_IMAGE_REF = 255 + 1 + 128 + 1 + 135;
/** An operation id (a UUID) or a prefix of one. */
export const MAX_OPERATION_ID = 36;
/** Containers one Restart may name. */
export const MAX_CONTAINERS_PER_RESTART = 32;
/** Images one PullImages may name. */
export const MAX_IMAGES_PER_PULL = 100;
/** Size of a request's auth_config_json, bytes. */
export const MAX_AUTH_CONFIG_BYTES = 64 * 1024;
/** Calls one caller may have open at once (streams included). */
export const MAX_OPEN_CALLS_PER_CALLER = 64;
