// A stand-in for a CommonJS package, put in the module cache before the package that requires it is loaded: that
// package then finds the stand-in and never loads the real one (used for dependencies of dependencies the agent
// never calls into, which cost memory as they load: daemon/without-otel.ts, runtime/docker/without-ssh.ts).
import { Module } from 'node:module';

/**
 * Makes request, as requireFrom resolves it, answer with exports, unless the real package is loaded already.
 * Returns the resolved path.
 */
export function putStandIn(requireFrom: NodeJS.Require, request: string, exports: unknown): string {
  const resolved = requireFrom.resolve(request);
  if (!requireFrom.cache[resolved]) {
    const m = new Module(resolved);
    m.filename = resolved;
    m.loaded = true;
    m.exports = exports;
    requireFrom.cache[resolved] = m;
  }
  return resolved;
}
