// Finds the node's container runtime: an explicit choice, or in `auto` mode the well-known CRI sockets
// (containerd, CRI-O, cri-dockerd) and then the Docker socket, each checked by asking its version.
import { existsSync } from 'node:fs';
import { AgentError, asAgentError } from '../errors.js';
import type { Runtime } from './runtime.js';
import type { RuntimeVersion } from './types.js';

/** How long a runtime may take to answer its version at start, unless told (a socket that accepts and never answers). */
export const DEFAULT_RUNTIME_TIMEOUT_MS = 10_000;

/** Well-known CRI endpoints, in the order auto-detection tries them. */
export const CRI_SOCKETS = [
  'unix:///run/containerd/containerd.sock',
  'unix:///var/run/crio/crio.sock',
  'unix:///var/run/cri-dockerd.sock',
] as const;

/** The default Docker Engine socket. */
export const DOCKER_SOCKET = 'unix:///var/run/docker.sock';

/** Which runtime to use and where. */
export interface DetectOptions {
  runtime: 'auto' | 'cri' | 'docker';
  criEndpoint?: string;
  dockerHost?: string;
  /** Deadline of each runtime's first answer, ms (default DEFAULT_RUNTIME_TIMEOUT_MS). */
  runtimeTimeoutMs?: number;
}

/** Constructors of the two adapters, injected so detection does not depend on either (and may load them lazily). */
export interface RuntimeFactories {
  cri(endpoint: string): Runtime | Promise<Runtime>;
  docker(host: string): Runtime | Promise<Runtime>;
}

/** The socket path of a `unix://` endpoint (or a bare path); undefined for other schemes. */
export function socketPathOf(endpoint: string): string | undefined {
  if (endpoint.startsWith('unix://')) return endpoint.slice('unix://'.length);
  if (endpoint.startsWith('/')) return endpoint;
  return undefined;
}

/** The candidates auto-detection tries, in order. */
export function candidates(opts: DetectOptions): { kind: 'cri' | 'docker'; endpoint: string }[] {
  if (opts.runtime === 'cri') return [{ kind: 'cri', endpoint: opts.criEndpoint ?? CRI_SOCKETS[0] }];
  if (opts.runtime === 'docker') return [{ kind: 'docker', endpoint: opts.dockerHost ?? DOCKER_SOCKET }];
  const cri = opts.criEndpoint ? [opts.criEndpoint] : [...CRI_SOCKETS];
  const docker = opts.dockerHost ?? DOCKER_SOCKET;
  return [...cri.map((endpoint) => ({ kind: 'cri' as const, endpoint })), { kind: 'docker' as const, endpoint: docker }];
}

/** Connects to the first runtime that answers; Unavailable naming every socket tried, and why, otherwise. */
export async function detectRuntime(opts: DetectOptions, factories: RuntimeFactories, exists: (path: string) => boolean = existsSync): Promise<Runtime> {
  return (await connectRuntime(opts, factories, exists)).runtime;
}

/**
 * detectRuntime with the version the runtime answered. A runtime named by --runtime that does not answer within
 * runtimeTimeoutMs fails with DeadlineExceeded naming its socket; in auto mode it is one of the sockets tried.
 */
export async function connectRuntime(
  opts: DetectOptions,
  factories: RuntimeFactories,
  exists: (path: string) => boolean = existsSync,
): Promise<{ runtime: Runtime; version: RuntimeVersion }> {
  const tried: string[] = [];
  for (const c of candidates(opts)) {
    const sock = socketPathOf(c.endpoint);
    if (opts.runtime === 'auto' && sock && !exists(sock)) {
      tried.push(`${c.endpoint} (no such socket)`);
      continue;
    }
    const rt = await (c.kind === 'cri' ? factories.cri(c.endpoint) : factories.docker(c.endpoint));
    try {
      return { runtime: rt, version: await versionWithin(rt, c.endpoint, opts.runtimeTimeoutMs) };
    } catch (err) {
      rt.close();
      const e = asAgentError(err);
      // One runtime asked for and wedged: its own line, naming the socket and the flag.
      if (opts.runtime !== 'auto' && e.kind === 'DeadlineExceeded') throw e;
      tried.push(`${c.endpoint} (${e.message})`);
    }
  }
  throw new AgentError('Unavailable', `no container runtime answered; tried: ${tried.join('; ')}`);
}

/**
 * The runtime's version, or DeadlineExceeded naming the endpoint when it does not answer within ms (a socket
 * that accepts connections and never replies: a wedged runtime, or something else listening there).
 */
export async function versionWithin(rt: Runtime, endpoint: string, ms = DEFAULT_RUNTIME_TIMEOUT_MS): Promise<RuntimeVersion> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new AgentError('DeadlineExceeded', `container runtime at ${endpoint} accepted the connection but did not answer within ${ms / 1000}s (--runtime-timeout)`)), ms);
  });
  try {
    return await Promise.race([rt.version(), late]);
  } finally {
    clearTimeout(timer);
  }
}
