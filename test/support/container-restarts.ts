// Helpers of the ContainerRestart tests: objects to create and waits on their status.
import type { ContainerRestartApi } from '../../src/controllers/container-restart/api.js';
import type { ContainerRestart, ContainerRestartSpec } from '../../src/controllers/container-restart/types.js';
import { AgentError } from '../../src/errors.js';

/** A ContainerRestart object named name in ns. */
export function containerRestart(ns: string, name: string, spec: ContainerRestartSpec): ContainerRestart {
  return { apiVersion: 'inplace-agent.io/v1alpha1', kind: 'ContainerRestart', metadata: { name, namespace: ns }, spec };
}

/** Polls the object until pred holds; fails with the last status seen. */
export async function waitForStatus(api: ContainerRestartApi, ns: string, name: string, pred: (cr: ContainerRestart) => boolean, timeoutMs = 60_000): Promise<ContainerRestart> {
  const deadline = Date.now() + timeoutMs;
  let last: ContainerRestart | undefined;
  for (;;) {
    try {
      last = await api.get(ns, name);
      if (pred(last)) return last;
    } catch (err) {
      if (!AgentError.is(err, 'Unavailable')) throw err;
    }
    if (Date.now() > deadline) throw new Error(`ContainerRestart ${ns}/${name}: condition not met in ${timeoutMs} ms; last status ${JSON.stringify(last?.status)}`);
    await new Promise((r) => setTimeout(r, 150));
  }
}

/** Polls until the object is gone; returns how long that took. */
export async function waitForDeletion(api: ContainerRestartApi, ns: string, name: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await api.get(ns, name);
    } catch (err) {
      if (AgentError.is(err, 'NotFound')) return;
      throw err;
    }
    if (Date.now() > deadline) throw new Error(`ContainerRestart ${ns}/${name} still exists after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 200));
  }
}
