// Runs a container's preStop hook from its pod spec, as the kubelet would before stopping it: exec (through
// the runtime, CRI ExecSync), httpGet against the pod IP and the container's named ports, tcpSocket, or
// sleep. A failed hook is reported and the stop goes ahead (kubelet semantics); the caller takes the hook's
// time out of the grace period.
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import type { V1Container, V1LifecycleHandler } from '../k8s/client.js';
import { AgentError } from '../errors.js';
import { RefusalReasons } from '../engine/reasons.js';
import type { Clock } from '../clock.js';
import type { ExecResult } from '../runtime/types.js';

/** What a hook needs from its surroundings. */
export interface PreStopContext {
  container: V1Container;
  podIp: string;
  /** Runs a command in the container (the runtime's exec), bounded by timeoutSeconds. */
  exec(cmd: string[], timeoutSeconds: number): Promise<ExecResult>;
  clock: Clock;
}

/** The outcome of a hook: ok, or what went wrong (the stop goes ahead either way). */
export interface PreStopResult {
  ok: boolean;
  detail: string;
}

/** The container's preStop handler, or undefined when it has none. */
export function preStopHandler(c: V1Container): V1LifecycleHandler | undefined {
  const h = c.lifecycle?.preStop;
  return h && (h.exec || h.httpGet || h.tcpSocket || h.sleep) ? h : undefined;
}

/** A port given by number or by the name of one of the container's ports; InvalidArgument when unknown. */
export function resolvePort(c: V1Container, port: number | string): number {
  if (typeof port === 'number') return port;
  if (/^\d+$/.test(port)) return Number(port);
  const named = (c.ports ?? []).find((p) => p.name === port);
  if (!named) throw new AgentError('InvalidArgument', `the preStop hook of container "${c.name}" names port "${port}", which the container does not declare`, { reason: RefusalReasons.InvalidPreStopHook });
  return named.containerPort;
}

/** Checks what can be checked before anything is touched (named ports, an empty command). */
export function checkPreStop(c: V1Container): void {
  const h = preStopHandler(c);
  if (!h) return;
  if (h.exec && (h.exec.command ?? []).length === 0) throw new AgentError('InvalidArgument', `the preStop exec hook of container "${c.name}" has no command`, { reason: RefusalReasons.InvalidPreStopHook });
  if (h.httpGet) resolvePort(c, h.httpGet.port);
  if (h.tcpSocket) resolvePort(c, h.tcpSocket.port);
}

/** Runs the hook, bounded by timeoutMs. Never throws: a failure is in the result. */
export async function runPreStop(h: V1LifecycleHandler, ctx: PreStopContext, timeoutMs: number): Promise<PreStopResult> {
  const limit = Math.max(1, timeoutMs);
  try {
    if (h.exec) {
      const res = await ctx.exec(h.exec.command ?? [], Math.max(1, Math.ceil(limit / 1000)));
      return res.exitCode === 0 ? { ok: true, detail: 'exec exited 0' } : { ok: false, detail: `exec exited with code ${res.exitCode}: ${res.stderr.slice(0, 300)}` };
    }
    if (h.httpGet) {
      const g = h.httpGet;
      const port = resolvePort(ctx.container, g.port);
      const status = await httpGet((g.scheme ?? 'HTTP').toUpperCase() === 'HTTPS', g.host || ctx.podIp, port, g.path || '/', g.httpHeaders ?? [], limit);
      return status >= 200 && status < 400 ? { ok: true, detail: `httpGet answered ${status}` } : { ok: false, detail: `httpGet answered ${status}` };
    }
    if (h.tcpSocket) {
      const port = resolvePort(ctx.container, h.tcpSocket.port);
      await tcpConnect(h.tcpSocket.host || ctx.podIp, port, limit);
      return { ok: true, detail: 'tcpSocket connected' };
    }
    if (h.sleep) {
      await ctx.clock.sleep(Math.min(limit, h.sleep.seconds * 1000));
      return { ok: true, detail: `slept ${h.sleep.seconds}s` };
    }
    return { ok: true, detail: 'no handler' };
  } catch (err) {
    return { ok: false, detail: err instanceof Error ? err.message : String(err) };
  }
}

function httpGet(tls: boolean, host: string, port: number, path: string, headers: { name: string; value: string }[], timeoutMs: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = (tls ? https : http).request(
      { host, port, path, method: 'GET', headers: Object.fromEntries(headers.map((h) => [h.name, h.value])), timeout: timeoutMs, rejectUnauthorized: false },
      (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`httpGet ${host}:${port}${path} timed out after ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end();
  });
}

function tcpConnect(host: string, port: number, timeoutMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const s = net.connect({ host, port, timeout: timeoutMs });
    s.once('connect', () => {
      s.destroy();
      resolve();
    });
    s.once('timeout', () => s.destroy(new Error(`tcpSocket ${host}:${port} timed out after ${timeoutMs} ms`)));
    s.once('error', reject);
  });
}
