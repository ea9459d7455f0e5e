// Pods that serve HTTP behind a Service on the test cluster, for the restart-traffic test and benchmark. The
// server is a few lines of Node.js run by the agent's own image (which ships Node.js; the DaemonSet put it on
// the node): it answers every request, keeps connections alive, and on SIGTERM stops accepting, answers what
// comes on open connections with "Connection: close" and exits once they are gone (at most 2 s) - a
// well-behaved app; whatever fails around its restart is the platform's doing.
import { AppsV1Api, CoreV1Api, DiscoveryV1Api, type KubeConfig, type V1Pod } from '@kubernetes/client-node';
import { READY_CONDITION } from '../../src/kube/ready-condition.js';
import { kubeEnv } from '../testbed/kube-env.js';

const env = kubeEnv();

/** The port the server listens on in its pod. */
export const SERVER_PORT = 8080;

/** The server, for `node -e`. */
export const SERVER_JS = [
  "const http = require('http');",
  'let closing = false;',
  "const s = http.createServer((q, r) => { if (closing) r.setHeader('Connection', 'close'); r.end('ok ' + process.env.HOSTNAME + '\\n'); });",
  's.keepAliveTimeout = 60000;',
  `s.listen(${SERVER_PORT});`,
  // server.close() would also drop idle keep-alive connections at once, racing a client's next request on them.
  "process.on('SIGTERM', () => { closing = true; s.closeIdleConnections = () => {}; s.close(() => process.exit(0)); setTimeout(() => process.exit(0), 2000); });",
].join('\n');

/** The agent's image as the DaemonSet runs it (it has Node.js). */
export async function agentImage(kc: KubeConfig): Promise<string> {
  const ds = await kc.makeApiClient(AppsV1Api).readNamespacedDaemonSet({ name: 'inplace-agent', namespace: 'inplace-system' });
  const image = ds.spec?.template.spec?.containers.find((c) => c.name === 'agent')?.image;
  if (!image) throw new Error('the DaemonSet inplace-system/inplace-agent has no container "agent"');
  return image;
}

/** A pod of app `app` that runs the server, on the first node; gated on the agent's condition unless gate is false. */
export function serverPod(ns: string, name: string, app: string, image: string, gate = true): V1Pod {
  return {
    metadata: { name, namespace: ns, labels: { app } },
    spec: {
      nodeName: env.nodeName,
      terminationGracePeriodSeconds: 5,
      ...(gate ? { readinessGates: [{ conditionType: READY_CONDITION }] } : {}),
      containers: [serverContainer(image)],
    },
  };
}

/** The server's container. */
export function serverContainer(image: string) {
  return {
    name: 'app',
    image,
    imagePullPolicy: 'IfNotPresent',
    command: ['/usr/local/bin/node', '-e', SERVER_JS],
    ports: [{ containerPort: SERVER_PORT }],
    // One probe timing out on a loaded node must not take a replica out: with three of four drained at once, the
    // fourth is the Service's only endpoint, and one failed probe emptied it (kube-proxy then held it empty for a
    // minSyncPeriod). A stopped container is unready at once whatever the threshold; a new one is ready at its first success.
    readinessProbe: { httpGet: { path: '/', port: SERVER_PORT }, periodSeconds: 1, timeoutSeconds: 2, failureThreshold: 3 },
  };
}

/** Where clients reach a Service from the host. */
export interface ServiceAddress {
  clusterIp: string;
  port: number;
  /** The node's address and the NodePort. */
  nodeIp: string;
  nodePort: number;
}

/** A NodePort Service `name` over the pods of app. */
export async function createService(kc: KubeConfig, ns: string, name: string, app: string): Promise<ServiceAddress> {
  const core = kc.makeApiClient(CoreV1Api);
  const svc = await core.createNamespacedService({
    namespace: ns,
    body: { metadata: { name }, spec: { type: 'NodePort', selector: { app }, ports: [{ port: 80, targetPort: SERVER_PORT }] } },
  });
  return { clusterIp: svc.spec?.clusterIP ?? '', port: 80, nodeIp: env.nodeIp, nodePort: svc.spec?.ports?.[0]?.nodePort ?? 0 };
}

/** Waits until the Service's slices hold n ready endpoints. */
export async function waitReadyEndpoints(kc: KubeConfig, ns: string, service: string, n: number, ms = 90_000): Promise<void> {
  const disco = kc.makeApiClient(DiscoveryV1Api);
  const deadline = Date.now() + ms;
  let seen = -1;
  for (;;) {
    const slices = await disco.listNamespacedEndpointSlice({ namespace: ns, labelSelector: `kubernetes.io/service-name=${service}` });
    seen = slices.items.reduce((k, s) => k + (s.endpoints ?? []).filter((e) => e.conditions?.ready !== false).length, 0);
    if (seen === n) return;
    if (Date.now() > deadline) throw new Error(`Service ${ns}/${service}: ${seen} ready endpoints after ${ms} ms, want ${n}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}
