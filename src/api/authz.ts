// Who may call which RPC over TCP: a policy file (--authz-file) naming, per permission, the client
// certificate names allowed it, and the server interceptor that enforces it before any handler runs.
//
// File format (JSON; every key optional, unknown keys refused):
//   { "read": ["dashboard", "deployer"], "pull": ["deployer"], "restart": ["deployer"], "cancel": ["deployer"] }
// A caller's names are its certificate's subject CN and its DNS and URI subject alternative names; a caller
// is allowed a permission when any of its names is listed for it, or the list holds "*" (any certificate the
// --client-ca accepts).
import { readFileSync } from 'node:fs';
import type { PeerCertificate } from 'node:tls';
import * as grpc from '@grpc/grpc-js';
import { AgentError } from '../errors.js';
import { toServiceError } from './status.js';
import { REFLECTION_METHODS } from './reflection.js';

/** What an RPC needs: read state, pull images, restart containers, cancel operations. */
export type Permission = 'read' | 'pull' | 'restart' | 'cancel';

/** Every permission, in the order the file documents them. */
export const PERMISSIONS: readonly Permission[] = ['read', 'pull', 'restart', 'cancel'];

/** The permission each agent RPC needs, by full gRPC method path. */
export const METHOD_PERMISSION: Readonly<Record<string, Permission>> = {
  '/inplace.v1.Agent/ListPods': 'read',
  '/inplace.v1.Agent/GetOperation': 'read',
  '/inplace.v1.Agent/ListOperations': 'read',
  '/inplace.v1.Agent/WatchOperation': 'read',
  '/inplace.v1.Agent/Version': 'read',
  '/inplace.v1.Agent/PullImages': 'pull',
  '/inplace.v1.Agent/Restart': 'restart',
  '/inplace.v1.Agent/CancelOperation': 'cancel',
  // Reflection shows the API's shape (services, methods, messages): what a reader may see.
  ...Object.fromEntries(REFLECTION_METHODS.map((m) => [m, 'read' as const])),
};

/** Methods any caller that passed the TLS handshake may use (probes). */
const OPEN_METHODS = new Set(['/grpc.health.v1.Health/Check', '/grpc.health.v1.Health/Watch', '/grpc.health.v1.Health/List']);

/** Longest name a policy may list (a DNS name is at most 253 characters; URIs get some more room). */
const MAX_NAME = 1024;

/** A validated policy: which names hold which permission. */
export class AuthzPolicy {
  private constructor(private readonly grants: ReadonlyMap<Permission, ReadonlySet<string>>) {}

  /** Parses and validates a policy; source names the file in errors. Throws AgentError(InvalidArgument). */
  static parse(text: string, source: string): AuthzPolicy {
    const bad = (why: string) => new AgentError('InvalidArgument', `--authz-file ${source}: ${why}`);
    let doc: unknown;
    try {
      doc = JSON.parse(text);
    } catch (err) {
      throw bad(`not valid JSON (${(err as Error).message})`);
    }
    if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) throw bad('must be a JSON object like {"read": ["name"], "restart": ["name"]}');
    const grants = new Map<Permission, Set<string>>();
    for (const [key, value] of Object.entries(doc)) {
      if (!(PERMISSIONS as readonly string[]).includes(key)) {
        throw bad(`unknown key ${JSON.stringify(key.slice(0, 40))}; the keys are ${PERMISSIONS.join(', ')}`);
      }
      if (!Array.isArray(value)) throw bad(`"${key}" must be a list of certificate names`);
      const names = new Set<string>();
      value.forEach((n: unknown, i) => {
        if (typeof n !== 'string' || n.trim() === '' || n !== n.trim() || n.length > MAX_NAME) {
          throw bad(`"${key}"[${i}] must be a non-empty name without surrounding spaces, at most ${MAX_NAME} characters`);
        }
        names.add(n);
      });
      grants.set(key as Permission, names);
    }
    return new AuthzPolicy(grants);
  }

  /** Reads and validates a policy file. Throws AgentError(InvalidArgument) naming the file. */
  static load(file: string): AuthzPolicy {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (err) {
      throw new AgentError('InvalidArgument', `--authz-file ${file}: cannot read it (${(err as NodeJS.ErrnoException).code ?? String(err)})`);
    }
    return AuthzPolicy.parse(text, file);
  }

  /** Whether a caller known by names holds permission. */
  allows(names: readonly string[], permission: Permission): boolean {
    const granted = this.grants.get(permission);
    if (!granted) return false;
    return granted.has('*') || names.some((n) => granted.has(n));
  }

  /** Names per permission, for the start-up log. */
  summary(): Record<Permission, number> {
    return Object.fromEntries(PERMISSIONS.map((p) => [p, this.grants.get(p)?.size ?? 0])) as Record<Permission, number>;
  }
}

/** The names a client certificate identifies its holder by: subject CN, then DNS and URI SANs. */
export function certificateNames(cert: PeerCertificate | undefined): string[] {
  if (!cert || Object.keys(cert).length === 0) return [];
  const names: string[] = [];
  const cn = cert.subject?.CN;
  for (const c of Array.isArray(cn) ? cn : cn ? [cn] : []) names.push(c);
  // Node renders SANs as `DNS:a, URI:b, IP Address:c`; values with separators in them are JSON-quoted.
  for (const m of (cert.subjectaltname ?? '').matchAll(/(DNS|URI):("(?:[^"\\]|\\.)*"|[^,]*)(?:, |$)/g)) {
    const value = m[2].startsWith('"') ? (JSON.parse(m[2]) as string) : m[2];
    if (value && !names.includes(value)) names.push(value);
  }
  return names;
}

/** A refused call, for logs and metrics. */
export interface Denial {
  /** The caller's certificate names (empty when it presented none). */
  names: string[];
  method: string;
  /** What the method needs; undefined for a method outside the policy. */
  permission?: Permission;
  peer: string;
}

/** A short, printable form of a caller's names for messages. */
export function callerLabel(names: readonly string[]): string {
  if (names.length === 0) return '(no certificate name)';
  const shown = names.slice(0, 3).map((n) => JSON.stringify(n.length > 64 ? n.slice(0, 64) + '…' : n));
  return shown.join(', ') + (names.length > 3 ? ` and ${names.length - 3} more` : '');
}

/**
 * A server interceptor refusing, with PERMISSION_DENIED and before the handler sees anything, every call
 * whose client certificate names lack the method's permission under policy() (read on each call, so a
 * reloaded policy applies to the next call).
 */
export function authzInterceptor(policy: () => AuthzPolicy, onDenied: (d: Denial) => void): grpc.ServerInterceptor {
  return (method, call) => {
    const path = method.path;
    if (OPEN_METHODS.has(path)) return new grpc.ServerInterceptingCall(call);
    const listener = new grpc.ServerListenerBuilder()
      .withOnReceiveMetadata((metadata, next) => {
        const names = certificateNames(call.getAuthContext().sslPeerCertificate);
        const permission = METHOD_PERMISSION[path] as Permission | undefined;
        if (permission && policy().allows(names, permission)) {
          next(metadata);
          return;
        }
        onDenied({ names, method: path, permission, peer: call.getPeer() });
        const why = permission
          ? `caller ${callerLabel(names)} may not ${permission} (${path.split('/').pop()} needs the "${permission}" permission in the agent's --authz-file)`
          : `caller ${callerLabel(names)}: method ${path.slice(0, 100)} is not served`;
        const err = toServiceError(new AgentError('PermissionDenied', why));
        call.sendStatus({ code: err.code, details: err.details, metadata: err.metadata });
      })
      .build();
    return new grpc.ServerInterceptingCall(call, new grpc.ResponderBuilder().withStart((next) => next(listener)).build());
  };
}
