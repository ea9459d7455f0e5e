// Parsing and normalising image references (`[registry/]path[:tag][@algo:hex]`), following the grammar of the
// distribution reference format, so that bad references are refused before anything is touched.
import { AgentError } from './errors.js';
import { quote } from './quote.js';

/** A parsed image reference. */
export interface ImageRef {
  /** Registry host[:port], `docker.io` when none was given. */
  registry: string;
  /** Repository path in that registry (`library/` added for single-name Docker Hub images). */
  repository: string;
  tag?: string;
  digest?: string;
  /** The reference in full normal form, e.g. `docker.io/library/busybox:latest`. */
  normalized: string;
  /** What was given. */
  original: string;
}

const COMPONENT = /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$/;
const TAG = /^[\w][\w.-]{0,127}$/;
const DIGEST = /^[a-z0-9]+(?:[+._-][a-z0-9]+)*:[a-zA-Z0-9=_-]{32,}$/;
const HOST = /^(?:localhost|(?:[a-zA-Z0-9-]+\.)*[a-zA-Z0-9-]+|\[[0-9a-fA-F:]+\])(?::[0-9]+)?$/;

/** Parses an image reference; throws InvalidArgument naming the reference and what is wrong with it. */
export function parseImageRef(input: string): ImageRef {
  const bad = (why: string) => new AgentError('InvalidArgument', `invalid image reference ${quote(input)}: ${why}`);
  const ref = input.trim();
  if (ref === '') throw bad('empty');
  if (ref.length > 255 + 1 + 128 + 1 + 135) throw bad(`${ref.length} characters long`);
  let rest = ref;
  let digest: string | undefined;
  const at = rest.indexOf('@');
  if (at >= 0) {
    digest = rest.slice(at + 1);
    rest = rest.slice(0, at);
    if (!DIGEST.test(digest)) throw bad(`digest ${quote(digest, 32)} is not of the form algorithm:hex`);
    if (digest.startsWith('sha256:') && !/^sha256:[a-f0-9]{64}$/.test(digest)) throw bad('sha256 digest must be 64 lowercase hex digits');
  }
  let tag: string | undefined;
  const lastSlash = rest.lastIndexOf('/');
  const colon = rest.lastIndexOf(':');
  if (colon > lastSlash) {
    tag = rest.slice(colon + 1);
    rest = rest.slice(0, colon);
    if (!TAG.test(tag)) throw bad(`tag ${quote(tag, 32)} is not valid`);
  }
  if (rest === '') throw bad('no repository name');
  if (rest.length > 255) throw bad(`the name is ${rest.length} characters long; at most 255 are allowed`);
  const parts = rest.split('/');
  let registry = 'docker.io';
  const first = parts[0];
  if (parts.length > 1 && (first.includes('.') || first.includes(':') || first === 'localhost' || first !== first.toLowerCase())) {
    const port = /:(\d+)$/.exec(first)?.[1];
    if (!HOST.test(first) || (port !== undefined && !(Number(port) >= 1 && Number(port) <= 65535))) throw bad(`registry ${quote(first, 32)} is not a valid host[:port]`);
    registry = first;
    parts.shift();
  }
  for (const p of parts) {
    if (!COMPONENT.test(p)) throw bad(`path component ${quote(p, 32)} must be lowercase letters, digits and separators`);
  }
  if (registry === 'docker.io' && parts.length === 1) parts.unshift('library');
  const repository = parts.join('/');
  if (!tag && !digest) tag = 'latest';
  const normalized = `${registry}/${repository}${tag ? ':' + tag : ''}${digest ? '@' + digest : ''}`;
  return { registry, repository, tag, digest, normalized, original: input };
}

/** Whether two references name the same image (after normalisation). */
export function sameImage(a: string, b: string): boolean {
  try {
    return parseImageRef(a).normalized === parseImageRef(b).normalized;
  } catch {
    return a === b;
  }
}

/** Whether the image a status reports is the one asked for (the kubelet may report it normalized). */
export function imageMatches(reported: string, wanted: string): boolean {
  if (reported === wanted) return true;
  const norm = (s: string) => s.replace(/^docker\.io\/(library\/)?/, '');
  return norm(reported) === norm(wanted);
}
