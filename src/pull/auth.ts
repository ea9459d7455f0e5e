// Registry credentials from a Docker config.json-style file, looked up by image the way the kubelet's
// keyring does: keys are registry hosts (optionally with a port, a path prefix or a `*.` wildcard), URL-ish
// keys such as `https://index.docker.io/v1/` are normalised, and the most specific match wins.
// Nothing here ever logs or puts a secret into an error message.
import { readFile } from 'node:fs/promises';
import { AgentError } from '../errors.js';
import { parseImageRef } from '../image-ref.js';
import type { RegistryAuth } from '../runtime/types.js';
import type { AuthKeyring } from './types.js';

/** Hosts that all mean Docker Hub. */
const DOCKER_HUB_ALIASES = new Set(['docker.io', 'index.docker.io', 'registry-1.docker.io', 'registry.hub.docker.com']);
/** The host containerd pulls Docker Hub images from when no mirror is configured. */
const DOCKER_HUB_HOST = 'registry-1.docker.io';

/**
 * The canonical keyring key of a config.json `auths` key: scheme and the registry API path (`/v1/`, `/v2/`)
 * dropped, host lower-cased, Docker Hub aliases folded into `docker.io`; a repository path prefix is kept.
 */
export function normalizeRegistryKey(key: string): string {
  let k = key.trim();
  k = k.replace(/^[a-z][a-z0-9+.-]*:\/\//i, '');
  k = k.replace(/\/+$/, '');
  k = k.replace(/\/v[12]$/, '');
  const slash = k.indexOf('/');
  const host = (slash < 0 ? k : k.slice(0, slash)).toLowerCase();
  const rest = slash < 0 ? '' : k.slice(slash);
  return (DOCKER_HUB_ALIASES.has(host) ? 'docker.io' : host) + rest;
}

interface ConfigEntry {
  auth?: unknown;
  username?: unknown;
  password?: unknown;
  identitytoken?: unknown;
  registrytoken?: unknown;
}

const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

/**
 * Parses a Docker config.json (`{"auths": {...}}`) or a bare `auths` map into a keyring. Throws
 * InvalidArgument naming the source and the key, never the secret, when an entry cannot be read.
 */
export function parseAuthConfig(input: string | object, source = 'auth config'): AuthKeyring {
  let doc: unknown = input;
  if (typeof input === 'string') {
    try {
      doc = JSON.parse(input);
    } catch {
      throw new AgentError('InvalidArgument', `${source} is not valid JSON`);
    }
  }
  if (typeof doc !== 'object' || doc === null) throw new AgentError('InvalidArgument', `${source} must be a JSON object`);
  const obj = doc as Record<string, unknown>;
  const auths = (typeof obj.auths === 'object' && obj.auths !== null ? obj.auths : obj) as Record<string, unknown>;
  const keyring: AuthKeyring = new Map();
  for (const [rawKey, rawEntry] of Object.entries(auths)) {
    if (typeof rawEntry !== 'object' || rawEntry === null) {
      if (auths === obj) continue; // other top-level config.json fields (credsStore, ...)
      throw new AgentError('InvalidArgument', `${source}: entry for "${rawKey}" must be an object`);
    }
    const e = rawEntry as ConfigEntry;
    const key = normalizeRegistryKey(rawKey);
    // serverAddress is set by lookupAuth, for the registry of the image it is looked up for.
    const auth: RegistryAuth = {};
    const encoded = str(e.auth);
    if (encoded) {
      const decoded = Buffer.from(encoded, 'base64').toString('utf8');
      const colon = decoded.indexOf(':');
      if (colon <= 0) throw new AgentError('InvalidArgument', `${source}: "auth" of "${rawKey}" is not base64 of user:password`);
      auth.username = decoded.slice(0, colon);
      auth.password = decoded.slice(colon + 1);
      auth.auth = encoded;
    }
    auth.username = str(e.username) ?? auth.username;
    auth.password = str(e.password) ?? auth.password;
    const identityToken = str(e.identitytoken);
    if (identityToken) auth.identityToken = identityToken;
    const registryToken = str(e.registrytoken);
    if (registryToken) auth.registryToken = registryToken;
    if (!auth.username && !auth.password && !auth.identityToken && !auth.registryToken) continue;
    keyring.set(key, auth);
  }
  return keyring;
}

/** Reads and parses an auth file (Docker config.json format); InvalidArgument when missing or malformed. */
export async function readAuthFile(path: string): Promise<AuthKeyring> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    throw new AgentError('InvalidArgument', `cannot read auth file ${path}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
  return parseAuthConfig(text, `auth file ${path}`);
}

interface KeyParts {
  host: string;
  port: string;
  path: string;
}

function splitKey(key: string): KeyParts {
  const slash = key.indexOf('/');
  const hostPort = slash < 0 ? key : key.slice(0, slash);
  const path = slash < 0 ? '' : key.slice(slash + 1);
  const m = /^(.*?)(?::(\d+))?$/.exec(hostPort) as RegExpExecArray;
  return { host: m[1], port: m[2] ?? '', path };
}

/** Whether a host glob (`*.example.com`, one label per `*`) matches host. */
function hostMatches(glob: string, host: string): boolean {
  const g = glob.split('.');
  const h = host.split('.');
  if (g.length !== h.length) return false;
  return g.every((label, i) => label === h[i] || (label.includes('*') && new RegExp('^' + label.split('*').map(escapeRe).join('[^.]*') + '$').test(h[i])));
}

const escapeRe = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * The serverAddress that keeps credentials on the registry they were looked up for: containerd's CRI hands
 * them only to a host equal to this URL's host (ParseAuth), so a mirror, or any other host that asks, gets
 * none; with no serverAddress it hands them to every host that asks. It must be a URL (a bare `host:port`
 * fails containerd's parse), and Docker Hub's pulls go to registry-1.docker.io.
 */
export function registryServerAddress(registry: string): string {
  const host = registry.toLowerCase();
  return `https://${DOCKER_HUB_ALIASES.has(host) ? DOCKER_HUB_HOST : host}`;
}

/**
 * The credentials for an image reference: among keys whose host (glob) and port match the reference's
 * registry and whose path is a prefix of its repository, the one with the longest path, exact hosts before
 * globs, with serverAddress naming the reference's registry (registryServerAddress). Undefined when none
 * match or the reference cannot be parsed.
 */
export function lookupAuth(keyring: AuthKeyring | undefined, image: string): RegistryAuth | undefined {
  if (!keyring || keyring.size === 0) return undefined;
  let ref;
  try {
    ref = parseImageRef(image);
  } catch {
    return undefined;
  }
  const target = splitKey(normalizeRegistryKey(ref.registry));
  let best: { auth: RegistryAuth; score: number } | undefined;
  for (const [key, auth] of keyring) {
    const k = splitKey(normalizeRegistryKey(key));
    if (k.port !== target.port) continue;
    if (!hostMatches(k.host, target.host)) continue;
    if (k.path && ref.repository !== k.path && !ref.repository.startsWith(k.path + '/')) continue;
    const score = k.path.length * 2 + (k.host.includes('*') ? 0 : 1);
    if (!best || score > best.score) best = { auth, score };
  }
  return best ? { ...best.auth, serverAddress: registryServerAddress(ref.registry) } : undefined;
}

/** The secrets an auth holds (password, tokens, the encoded pair), for redaction. */
export function secretsOf(auth: RegistryAuth | undefined): string[] {
  if (!auth) return [];
  return [auth.password, auth.auth, auth.identityToken, auth.registryToken].filter((s): s is string => !!s && s.length >= 3);
}

/** text with every secret of the given auths replaced by `***`. */
export function redact(text: string, ...auths: (RegistryAuth | undefined)[]): string {
  let out = text;
  for (const s of auths.flatMap(secretsOf)) out = out.split(s).join('***');
  return out;
}
