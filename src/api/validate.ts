// Checks of every request's shape at the API edge: lengths, counts, durations and characters, against the
// bounds in limits.ts. A request that fails is refused with InvalidArgument before the engine or the pull
// service sees it; the message names the field and shows at most a short, escaped prefix of what was sent.
import { AgentError } from '../errors.js';
import type { PullImagesRequest__Output } from '../gen/inplace/v1/PullImagesRequest.js';
import type { RestartRequest__Output } from '../gen/inplace/v1/RestartRequest.js';
import { quote } from '../quote.js';
import { parseImageRef } from '../image-ref.js';
import * as L from './limits.js';

/** Whether s holds a control character (NUL, newline, escape, DEL...). */
function hasControl(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x20 || c === 0x7f) return true;
  }
  return false;
}

/** A pod: NAMESPACE/NAME, docker/<name>, or a sandbox id (prefix): DNS and Docker name characters. */
const POD_ARG = /^[A-Za-z0-9][A-Za-z0-9._-]*(?:\/[A-Za-z0-9][A-Za-z0-9._-]*)?$/;
/** A container name: a DNS label (CRI), or a Docker container name. */
const CONTAINER_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;
/** An operation id (a UUID) or a prefix of one. */
const OPERATION_ID = /^[A-Za-z0-9-]+$/;

const POD_WHAT = 'give NAMESPACE/NAME, docker/NAME or a sandbox id (letters, digits, ".", "_", "-")';
const NAME_WHAT = 'a container name has letters, digits, ".", "_" and "-" only';

/** Checks value against a pattern after the length and control-character checks. */
function checkShape(field: string, value: string, max: number, shape: RegExp, what: string, opts: { optional?: boolean } = {}): void {
  checkIdentifier(field, value, max, opts);
  if (value !== '' && !shape.test(value)) throw invalid(`${field} ${quote(value)} is not valid: ${what}`);
}

function invalid(message: string): AgentError {
  return new AgentError('InvalidArgument', message);
}

/** An identifier the caller typed: at most max characters, no control characters; '' allowed only when optional. */
export function checkIdentifier(field: string, value: string, max: number, opts: { optional?: boolean } = {}): void {
  if (value.length > max) throw invalid(`${field} is ${value.length} characters long; at most ${max} are allowed (got ${quote(value, 32)})`);
  if (value.trim() === '' && !opts.optional) throw invalid(`${field} must not be empty`);
  if (hasControl(value)) throw invalid(`${field} ${quote(value)} contains control characters`);
}

/** A uint64 duration in ms (as the wire's decimal string) that must stay within MAX_DURATION_MS. */
export function checkDurationMs(field: string, value: string | number): number {
  const text = String(value);
  if (!/^\d{1,20}$/.test(text)) throw invalid(`${field} must be a whole number of milliseconds, got ${quote(text, 32)}`);
  const n = BigInt(text);
  if (n > BigInt(L.MAX_DURATION_MS)) throw invalid(`${field} is ${text} ms; at most ${L.MAX_DURATION_MS} ms (596h) is allowed`);
  return Number(n);
}

/** An image reference: bounded, then parsed (a bad one is refused naming a short prefix of it). */
export function checkImageRef(field: string, ref: string): void {
  checkIdentifier(field, ref, L.MAX_IMAGE_REF);
  if (ref !== ref.trim()) throw invalid(`${field} ${quote(ref)} has leading or trailing spaces`);
  parseImageRef(ref);
}

/** A Restart request as it came off the wire; container names of at most maxContainerName (the runtime's capability). */
export function validateRestart(req: RestartRequest__Output, maxContainerName: number): void {
  checkShape('pod', req.pod, L.MAX_POD_ARG, POD_ARG, POD_WHAT);
  if (req.containers.length === 0) throw invalid('name at least one container to restart');
  if (req.containers.length > L.MAX_CONTAINERS_PER_RESTART) {
    throw invalid(`a restart names at most ${L.MAX_CONTAINERS_PER_RESTART} containers, got ${req.containers.length}`);
  }
  const maxName = maxContainerName;
  const seen = new Set<string>();
  for (const name of req.containers) {
    checkShape('container name', name, maxName, CONTAINER_NAME, NAME_WHAT);
    if (seen.has(name)) throw invalid(`container ${quote(name)} is named twice`);
    seen.add(name);
  }
  const images = Object.entries(req.images);
  if (images.length > req.containers.length) throw invalid(`${images.length} images given for ${req.containers.length} containers`);
  for (const [name, image] of images) {
    checkShape('container name of an image', name, maxName, CONTAINER_NAME, NAME_WHAT);
    if (!seen.has(name)) throw invalid(`an image is given for container ${quote(name)}, which is not one of the containers to restart`);
    checkImageRef(`image of ${quote(name)}`, image);
  }
  if (req.graceSeconds > L.MAX_GRACE_SECONDS) throw invalid(`grace_seconds is ${req.graceSeconds}; at most ${L.MAX_GRACE_SECONDS} s (596h) is allowed`);
  checkDurationMs('min_ready_ms', req.minReadyMs);
  checkDurationMs('timeout_ms', req.timeoutMs);
}

/** A PullImages request as it came off the wire. */
export function validatePull(req: PullImagesRequest__Output): void {
  if (req.images.length === 0) throw invalid('name at least one image to pull');
  if (req.images.length > L.MAX_IMAGES_PER_PULL) throw invalid(`a pull names at most ${L.MAX_IMAGES_PER_PULL} images, got ${req.images.length}`);
  const seen = new Set<string>();
  for (const image of req.images) {
    checkImageRef('image', image);
    const key = parseImageRef(image).normalized;
    if (seen.has(key)) throw invalid(`image ${quote(image)} is named twice`);
    seen.add(key);
  }
  if (req.parallel > L.MAX_IMAGES_PER_PULL) throw invalid(`parallel is ${req.parallel}; at most ${L.MAX_IMAGES_PER_PULL} is allowed`);
  checkDurationMs('timeout_ms', req.timeoutMs);
  if (Buffer.byteLength(req.authConfigJson) > L.MAX_AUTH_CONFIG_BYTES) {
    throw invalid(`auth_config_json is ${Buffer.byteLength(req.authConfigJson)} bytes; at most ${L.MAX_AUTH_CONFIG_BYTES} are allowed`);
  }
}

/** An operation id or id prefix (GetOperation, WatchOperation, CancelOperation). */
export function validateOperationId(id: string): void {
  checkShape('operation id', id, L.MAX_OPERATION_ID, OPERATION_ID, 'give an operation id or a prefix of one (letters, digits, -)');
}

/** ListOperations' optional pod filter. */
export function validatePodFilter(pod: string): void {
  checkShape('pod', pod, L.MAX_POD_ARG, POD_ARG, POD_WHAT, { optional: true });
}
