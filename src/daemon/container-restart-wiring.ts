// Starts the ContainerRestart controller when a kubeconfig is found (--kubeconfig, $KUBECONFIG, in-cluster).
import os from 'node:os';
import type { Clock } from '../clock.js';
import type { Logger } from '../log.js';
import type { Engine } from '../engine/engine.js';
import type { Runtime } from '../runtime/runtime.js';
import { loadKubeConfig } from '../kube/kubeconfig.js';
import { ContainerRestartApi } from '../kube/container-restart/api.js';
import { ContainerRestartController } from '../kube/container-restart/controller.js';
import type { DaemonOptions } from './options.js';

/** The started controller, or undefined when no Kubernetes API is configured. */
export function startContainerRestarts(opts: DaemonOptions, engine: Engine, runtime: Runtime, clock: Clock, log: Logger): ContainerRestartController | undefined {
  const kc = loadKubeConfig({ kubeconfig: opts.kubeconfig });
  if (!kc) return undefined;
  const nodeName = opts.nodeName || os.hostname();
  const controller = new ContainerRestartController({
    kc,
    api: new ContainerRestartApi(kc),
    engine,
    nodeName,
    namespace: opts.watchNamespace,
    defaults: { graceSeconds: opts.defaultGraceSeconds, minReadyMs: opts.defaultMinReadyMs, timeoutMs: opts.defaultTimeoutMs },
    // The node's pods are the runtime's: a request for a pod elsewhere is left to that node's agent.
    hasPod: async (namespace, name) => (await runtime.listPods({ withIp: false })).some((p) => p.name === `${namespace}/${name}`),
    clock,
    log: log.child({ component: 'containerrestart' }),
  });
  controller.start();
  return controller;
}
