// Starts the ContainerRestart controller in Kubernetes mode.
import type { Clock } from '../clock.js';
import type { Logger } from '../log.js';
import type { Engine } from '../engine/engine.js';
import type { Runtime } from '../runtime/runtime.js';
import type { KubeMode } from '../kube/kube-mode.js';
import type { ContainerRestartMetrics } from '../controllers/container-restart/metrics.js';
import { ContainerRestartApi } from '../controllers/container-restart/api.js';
import { ContainerRestartController } from '../controllers/container-restart/controller.js';
import { podIsHere } from '../controllers/container-restart/pod-here.js';
import { SubjectAccessReviewer } from '../k8s/access-review.js';
import { KubeServiceAccounts } from '../controllers/container-restart/requester-alive.js';
import { ImpersonatedDryRun } from '../controllers/container-restart/admission-as-requester.js';
import type { V1Pod } from '../k8s/client.js';
import { selfPod } from '../k8s/self-pod.js';
import type { DaemonOptions } from './options.js';

/** The started controller for this node. */
export async function startContainerRestarts(
  kube: KubeMode,
  agentId: string,
  opts: DaemonOptions,
  engine: Engine,
  runtime: Runtime,
  clock: Clock,
  log: Logger,
  metrics?: ContainerRestartMetrics,
): Promise<ContainerRestartController> {
  const controller = new ContainerRestartController({
    agentId,
    kc: kube.kc,
    api: new ContainerRestartApi(kube.kc),
    engine,
    nodeName: kube.nodeName,
    namespace: opts.watchNamespace,
    defaults: { graceSeconds: opts.defaultGraceSeconds, minReadyMs: opts.defaultMinReadyMs, timeoutMs: opts.defaultTimeoutMs },
    // This node's pods: those the API server schedules here, and standalone pods the runtime runs (not
    // kubelet-managed, so known to no API server; refused unless --container-restart-standalone-pods). A
    // request for a pod elsewhere is left to that node's agent, and looked at again when the pod arrives here.
    findPod: async (namespace, name) => {
      const api = kube.pods.get(namespace, name);
      if (api) return { api };
      return podIsHere(false, await runtime.listPods({ withIp: false }), namespace, name) ? {} : undefined;
    },
    standalonePods: opts.containerRestartStandalonePods,
    onPod: (listener) => {
      const changed = (pod: V1Pod) => listener(pod.metadata?.namespace ?? '', pod.metadata?.name ?? '');
      kube.pods.on('pod', changed);
      return () => kube.pods.off('pod', changed);
    },
    // The creator's own rights, checked before a request is taken (the admission policy may be missing), and
    // that the creator still exists (a ServiceAccount, by uid).
    access: new SubjectAccessReviewer(kube.kc),
    accounts: new KubeServiceAccounts(kube.kc),
    // An image change is tried as the requester first (a dry run), so that admission judges the requester.
    admission: new ImpersonatedDryRun(kube.kc),
    selfPod: selfPod(),
    clock,
    log: log.child({ component: 'containerrestart' }),
    metrics,
  });
  controller.start();
  return controller;
}
