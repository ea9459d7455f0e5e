// What the SidecarSet tests do on the shared cluster: create one and wait until the injection policy sees it,
// change its spec, list the ContainerRestarts it made, and wait for the coordinator's decision in its status.
import * as k8s from '@kubernetes/client-node';
import { CR_GROUP, CR_PLURAL, CR_VERSION, type ContainerRestart } from '../../src/controllers/container-restart/types.js';
import { FLEET_GROUP, FLEET_VERSION, IMAGE_PREWARM_PLURAL, NODE_PREWARM_PLURAL, type ImagePrewarm, type NodePrewarm } from '../../src/controllers/image-prewarm/types.js';
import { SIDECARSET_LABEL } from '../../src/controllers/sidecarset/sidecarset-api.js';
import { injectedAnnotation, SCS_GROUP, SCS_PLURAL, SCS_VERSION, type SidecarSet, type SidecarSetSpec } from '../../src/controllers/sidecarset/types.js';
import { until } from './kube-test.js';

/** The SidecarSet resource for CustomObjectsApi calls. */
export const SCS = { group: SCS_GROUP, version: SCS_VERSION, plural: SCS_PLURAL };

/** Whether the pod's Ready condition is True. */
export const podReady = (p: k8s.V1Pod) => p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;

/** A container's status by name, a native sidecar's (initContainerStatuses) too. */
export const containerOf = (p: k8s.V1Pod, c: string) => [...(p.status?.containerStatuses ?? []), ...(p.status?.initContainerStatuses ?? [])].find((s) => s.name === c);

/** A SidecarSet's API as one test uses it. */
export class SidecarSetFixture {
  private readonly custom: k8s.CustomObjectsApi;
  private readonly core: k8s.CoreV1Api;
  /** The pod annotation its injection writes. */
  readonly annotation: string;

  constructor(
    kc: k8s.KubeConfig,
    readonly name: string,
  ) {
    this.custom = kc.makeApiClient(k8s.CustomObjectsApi);
    this.core = kc.makeApiClient(k8s.CoreV1Api);
    this.annotation = injectedAnnotation(name);
  }

  /** Creates it, then waits until a dry-run pod of labels in ns shows the injection (the policy reads a cache). */
  async create(spec: SidecarSetSpec, ns: string, labels: Record<string, string>): Promise<void> {
    await this.custom.createClusterCustomObject({ ...SCS, body: { apiVersion: `${SCS_GROUP}/${SCS_VERSION}`, kind: 'SidecarSet', metadata: { name: this.name }, spec } });
    await until('the policy to see the SidecarSet', 30_000, async () => {
      const body = { metadata: { name: 'probe', labels }, spec: { containers: [{ name: 'app', image: 'probe' }] } };
      const p = await this.core.createNamespacedPod({ namespace: ns, dryRun: 'All', body });
      return p.metadata?.annotations?.[this.annotation] ? true : undefined;
    });
  }

  read(): Promise<SidecarSet> {
    return this.custom.getClusterCustomObject({ ...SCS, name: this.name }) as Promise<SidecarSet>;
  }

  /** A merge patch of its spec. */
  async patchSpec(spec: Partial<SidecarSetSpec>): Promise<void> {
    await this.custom.patchClusterCustomObject({ ...SCS, name: this.name, body: { spec } }, k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch));
  }

  async delete(): Promise<void> {
    await this.custom.deleteClusterCustomObject({ ...SCS, name: this.name }).catch(() => undefined);
  }

  /** The ContainerRestarts of SidecarSets in ns. */
  async restarts(ns: string): Promise<ContainerRestart[]> {
    const r = (await this.custom.listNamespacedCustomObject({ group: CR_GROUP, version: CR_VERSION, plural: CR_PLURAL, namespace: ns, labelSelector: SIDECARSET_LABEL })) as { items: ContainerRestart[] };
    return r.items;
  }

  /** The SidecarSet once the coordinator has written the status of its generation with condition Updated's reason. */
  async settled(reason: string, ms = 180_000, more: (s: SidecarSet) => boolean = () => true): Promise<SidecarSet> {
    let last = '';
    return until(
      `SidecarSet ${this.name}'s status to say ${reason}`,
      ms,
      async () => {
        const s = await this.read();
        last = JSON.stringify(s.status);
        const cond = s.status?.conditions?.find((c) => c.type === 'Updated');
        return s.status?.observedGeneration === s.metadata.generation && cond?.reason === reason && more(s) ? s : undefined;
      },
      { seen: () => last },
    );
  }
}

/** The image a pod's spec gives a container (or native sidecar). */
export const specImage = (p: k8s.V1Pod, c: string) => [...(p.spec?.containers ?? []), ...(p.spec?.initContainers ?? [])].find((x) => x.name === c)?.image ?? '';

/**
 * Follows every change of the pods of labelSelector in ns (a list, then a watch from its resourceVersion) and
 * keeps the most pods seen at once with a sidecar down: not running and ready, or its image changed in the spec
 * while the instance that runs is still the one seen before the change (the kubelet is replacing it). Instances
 * are told by container ID, not by the status's image name (a node reports one of an image's tags, whichever).
 */
export async function sidecarsDownWatch(kc: k8s.KubeConfig, ns: string, labelSelector: string, sidecars: string[]): Promise<{ most: () => number; stop: () => void }> {
  const list = await kc.makeApiClient(k8s.CoreV1Api).listNamespacedPod({ namespace: ns, labelSelector });
  /** Per pod and sidecar: the last instance seen running and ready, and the spec image it was seen under. */
  const known = new Map<string, { id: string; image: string }>();
  const down = new Map<string, boolean>();
  const see = (p: k8s.V1Pod) => {
    let isDown = false;
    for (const c of sidecars) {
      const s = containerOf(p, c);
      const key = `${p.metadata?.name}/${c}`;
      const up = !!s?.state?.running && s.ready;
      if (up && known.get(key)?.id !== s.containerID) known.set(key, { id: s.containerID ?? '', image: specImage(p, c) });
      if (!up || known.get(key)?.image !== specImage(p, c)) isDown = true;
    }
    down.set(p.metadata?.name ?? '', isDown);
  };
  list.items.forEach(see);
  let most = [...down.values()].filter(Boolean).length;
  const w = await new k8s.Watch(kc).watch(
    `/api/v1/namespaces/${ns}/pods`,
    { labelSelector, resourceVersion: list.metadata?.resourceVersion },
    (type, p: k8s.V1Pod) => {
      if (type === 'DELETED') down.delete(p.metadata?.name ?? '');
      else see(p);
      most = Math.max(most, [...down.values()].filter(Boolean).length);
    },
    () => undefined,
  );
  return { most: () => most, stop: () => w.abort() };
}

/**
 * What a test sees of a SidecarSet's ImagePrewarms (updateStrategy.prewarm), sample by sample: each one's
 * creation, and, per node, when its part was done as the node's own NodePrewarm record says (the latest
 * completionTime of its images once the node's phase is Succeeded). Records go with their ImagePrewarm, which the
 * coordinator deletes within a second of the last node's part (it reads the records every 0.5 s): follow() watches
 * both kinds, so that no state is missed between samples.
 */
export class PrewarmSamples {
  private readonly custom: k8s.CustomObjectsApi;
  /** By ImagePrewarm name: the namespace it pre-warms, its images, its creationTimestamp (ms). */
  readonly created = new Map<string, { namespace: string; images: string[]; createdMs: number }>();
  /** By ImagePrewarm name, by node: when that node's part was done (ms). */
  readonly doneOn = new Map<string, Map<string, number>>();

  constructor(
    kc: k8s.KubeConfig,
    private readonly setUid: string,
  ) {
    this.custom = kc.makeApiClient(k8s.CustomObjectsApi);
  }

  private readonly watches: { abort(): void }[] = [];

  /** Takes one sample; answers how many of the SidecarSet's ImagePrewarms exist now. */
  async sample(): Promise<number> {
    const [pws, records] = await Promise.all([this.custom.listClusterCustomObject(this.prewarmList()) as Promise<{ items: ImagePrewarm[] }>, this.custom.listClusterCustomObject(this.recordList()) as Promise<{ items: NodePrewarm[] }>]);
    pws.items.forEach((pw) => this.seePrewarm(pw));
    records.items.forEach((r) => this.seeRecord(r));
    return pws.items.length;
  }

  /** Watches the ImagePrewarms and the records from now on (a list, then a watch from its resourceVersion), until stop(). */
  async follow(kc: k8s.KubeConfig): Promise<void> {
    const watch = async <T>(list: { group: string; version: string; plural: string; labelSelector?: string }, see: (o: T) => void) => {
      const r = (await this.custom.listClusterCustomObject(list)) as { items: T[]; metadata?: { resourceVersion?: string } };
      r.items.forEach(see);
      const path = `/apis/${list.group}/${list.version}/${list.plural}`;
      const opts = { resourceVersion: r.metadata?.resourceVersion, ...(list.labelSelector ? { labelSelector: list.labelSelector } : {}) };
      this.watches.push(await new k8s.Watch(kc).watch(path, opts, (type, o: T) => type !== 'DELETED' && see(o), () => undefined));
    };
    await Promise.all([watch<ImagePrewarm>(this.prewarmList(), (pw) => this.seePrewarm(pw)), watch<NodePrewarm>(this.recordList(), (r) => this.seeRecord(r))]);
  }

  /** Stops the watches of follow(). */
  stop(): void {
    for (const w of this.watches.splice(0)) w.abort();
  }

  private prewarmList() {
    return { group: FLEET_GROUP, version: FLEET_VERSION, plural: IMAGE_PREWARM_PLURAL, labelSelector: `${SIDECARSET_LABEL}=${this.setUid}` };
  }

  private recordList() {
    return { group: FLEET_GROUP, version: FLEET_VERSION, plural: NODE_PREWARM_PLURAL };
  }

  private seePrewarm(pw: ImagePrewarm): void {
    const createdMs = new Date(pw.metadata.creationTimestamp ?? 0).getTime();
    this.created.set(pw.metadata.name, { namespace: pw.spec.podSelector?.namespace ?? '', images: pw.spec.images, createdMs });
  }

  /** A node's record: its part of each ImagePrewarm once Succeeded (kept whichever is seen first, the record or the ImagePrewarm). */
  private seeRecord(r: NodePrewarm): void {
    for (const [name, e] of Object.entries(r.status?.prewarms ?? {})) {
      if (e.phase !== 'Succeeded') continue;
      const at = Math.max(...e.images.map((i) => new Date(i.completionTime ?? 0).getTime()));
      const byNode = this.doneOn.get(name) ?? new Map<string, number>();
      byNode.set(r.spec?.nodeName ?? r.metadata.name, at);
      this.doneOn.set(name, byNode);
    }
  }
}
