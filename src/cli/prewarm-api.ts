// The API server calls of `inplacectl prewarm`, in a module of their own so that inplacectl loads the Kubernetes
// client only when a prewarm command runs.
import * as k8s from '../k8s/client.js';
import { systemClock } from '../clock.js';
import { KubeFleetApi } from '../controllers/image-prewarm/fleet-api.js';
import { kubeError } from '../k8s/api-error.js';
import { selfRequester } from '../k8s/requester.js';
import { summarize } from '../controllers/image-prewarm/summary.js';
import { targetedNodes } from '../controllers/image-prewarm/targets.js';
import { FLEET_GROUP, FLEET_VERSION, IMAGE_PREWARM_PLURAL, type ImagePrewarm, type ImagePrewarmStatus, type NodePrewarm } from '../controllers/image-prewarm/types.js';

/** A prewarm's live status: summed up from the per-node records now. */
export async function liveStatus(kc: k8s.KubeConfig, name: string): Promise<{ prewarm: ImagePrewarm; status: ImagePrewarmStatus; nodes: Record<string, string> }> {
  const api = new KubeFleetApi(kc, systemClock, 'user');
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  let pw: ImagePrewarm;
  try {
    pw = (await custom.getClusterCustomObject({ group: FLEET_GROUP, version: FLEET_VERSION, plural: IMAGE_PREWARM_PLURAL, name })) as ImagePrewarm;
  } catch (err) {
    throw kubeError(err, `ImagePrewarm ${name}`, 'user');
  }
  const order = await targetedNodes(api, pw);
  const records: NodePrewarm[] = await api.listNodePrewarms();
  const status = summarize(pw, order, records);
  const byNode = new Map(records.map((r) => [r.spec?.nodeName ?? r.metadata.name, r]));
  const nodes: Record<string, string> = {};
  for (const n of order) {
    const e = byNode.get(n)?.status?.prewarms?.[name];
    nodes[n] = e && e.generation === (pw.metadata.generation ?? 0) ? e.phase : 'Waiting';
  }
  return { prewarm: pw, status, nodes };
}


/** Creates the ImagePrewarm, its requester this kubeconfig's user (deploy/admission-requester.yaml writes the same where installed). */
export async function createPrewarm(kc: k8s.KubeConfig, prewarm: object & { metadata: { name: string }; spec?: object }): Promise<void> {
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  const body = { ...prewarm, spec: { ...prewarm.spec, requester: await selfRequester(kc, 'user') } };
  try {
    await custom.createClusterCustomObject({ group: FLEET_GROUP, version: FLEET_VERSION, plural: IMAGE_PREWARM_PLURAL, body });
  } catch (err) {
    throw kubeError(err, `ImagePrewarm ${body.metadata.name}`, 'user');
  }
}

/** Deletes the ImagePrewarm. */
export async function deletePrewarm(kc: k8s.KubeConfig, name: string): Promise<void> {
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  try {
    await custom.deleteClusterCustomObject({ group: FLEET_GROUP, version: FLEET_VERSION, plural: IMAGE_PREWARM_PLURAL, name });
  } catch (err) {
    throw kubeError(err, `ImagePrewarm ${name}`, 'user');
  }
}
