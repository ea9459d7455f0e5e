// deploy/optional/fleet-prewarm-rbac.yaml shared by reference on the shared test cluster. Tests and benches whose
// agents are the DaemonSet's (so the shipped ServiceAccount inplace-system/inplace-agent) need these grants while
// they run, and when nobody needs them the ServiceAccount should have no more than deploy/ grants (the optional
// RBAC reads Secrets). Each run holds
// them with a Lease of its own (renewed while it runs, so a killed run's hold expires); the grants are created if
// missing, marked as installed by holders, and removed when the last live holder lets go, only if they carry
// that mark: grants installed by hand or by scripts stay. Taking and letting go happen under a lock Lease, so a
// run never removes them between another run's check and its use.
import { randomBytes } from 'node:crypto';
import * as k8s from '@kubernetes/client-node';
import { apiStatusCode } from '../../src/k8s/api-error.js';
import { shippedObjects } from './kube-shipped-rbac.js';

/** Where the hold Leases live: the agents' namespace, which deploy/ creates. */
const HOLD_NAMESPACE = 'inplace-system';
/** Label of every hold Lease. */
const HOLD_LABEL = 'inplace-agent.test/holds';
const HOLD_VALUE = 'fleet-prewarm-rbac';
const LOCK_NAME = 'fleet-prewarm-rbac-lock';
/** Annotation on grants that holders created (and so may remove). */
export const INSTALLED_BY_HOLDERS = 'inplace-agent.test/installed-by';
/** A hold lasts this long without renewal; renewed at a third of it. */
const HOLD_SECONDS = 180;
/** A lock is held for a few API calls; one older than this was left by a killed run. */
const LOCK_SECONDS = 30;

/** A hold on the optional fleet RBAC; release() lets it go (removing the grants if this was the last hold on grants holders installed). */
export interface FleetRbacHold {
  holder: string;
  release(): Promise<void>;
}

function expired(l: k8s.V1Lease, nowMs: number): boolean {
  const renew = l.spec?.renewTime ? new Date(l.spec.renewTime as unknown as string).getTime() : 0;
  return renew + (l.spec?.leaseDurationSeconds ?? 0) * 1000 < nowMs;
}

function lease(name: string, holder: string, seconds: number, labels: Record<string, string> = {}): k8s.V1Lease {
  const now = new k8s.V1MicroTime(Date.now());
  return { metadata: { name, namespace: HOLD_NAMESPACE, labels }, spec: { holderIdentity: holder, leaseDurationSeconds: seconds, acquireTime: now, renewTime: now } };
}

/** Runs fn holding the lock Lease; a lock left by a killed run is taken over once it expired. */
async function locked<T>(coord: k8s.CoordinationV1Api, holder: string, fn: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + 120_000;
  let mine: k8s.V1Lease;
  for (;;) {
    try {
      mine = await coord.createNamespacedLease({ namespace: HOLD_NAMESPACE, body: lease(LOCK_NAME, holder, LOCK_SECONDS) });
      break;
    } catch (err) {
      if (apiStatusCode(err) !== 409) throw err;
      const cur = await coord.readNamespacedLease({ name: LOCK_NAME, namespace: HOLD_NAMESPACE }).catch(() => undefined);
      if (cur && expired(cur, Date.now())) {
        await coord.deleteNamespacedLease({ name: LOCK_NAME, namespace: HOLD_NAMESPACE, body: { preconditions: { resourceVersion: cur.metadata?.resourceVersion } } }).catch(() => undefined);
        continue;
      }
      if (Date.now() > deadline) throw new Error(`the lock Lease ${HOLD_NAMESPACE}/${LOCK_NAME} stayed held by ${cur?.spec?.holderIdentity ?? '?'}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  try {
    return await fn();
  } finally {
    // Only this lock: one taken over after this run stalled past LOCK_SECONDS is the new holder's.
    await coord.deleteNamespacedLease({ name: LOCK_NAME, namespace: HOLD_NAMESPACE, body: { preconditions: { resourceVersion: mine.metadata?.resourceVersion } } }).catch(() => undefined);
  }
}

/** The optional fleet RBAC objects as shipped, marked as installed by holders. */
function grants(): k8s.KubernetesObject[] {
  return shippedObjects(['optional/fleet-prewarm-rbac.yaml']).map((o) => ({ ...o, metadata: { ...o.metadata, annotations: { ...o.metadata?.annotations, [INSTALLED_BY_HOLDERS]: 'holders' } } }));
}

/**
 * Holds deploy/optional/fleet-prewarm-rbac.yaml for the shipped ServiceAccount until release(): creates what is
 * missing of it (namespace inplace-system must exist), and keeps it while any live hold remains.
 */
export async function holdFleetRbac(kc: k8s.KubeConfig, what: string): Promise<FleetRbacHold> {
  const coord = kc.makeApiClient(k8s.CoordinationV1Api);
  const objects = kc.makeApiClient(k8s.KubernetesObjectApi);
  const holder = `${what}-${randomBytes(3).toString('hex')}`;
  const name = `fleet-prewarm-rbac-hold-${holder}`.toLowerCase().replace(/[^a-z0-9-]/g, '-').slice(0, 63);
  await locked(coord, holder, async () => {
    await coord.createNamespacedLease({ namespace: HOLD_NAMESPACE, body: lease(name, holder, HOLD_SECONDS, { [HOLD_LABEL]: HOLD_VALUE }) });
    for (const o of grants()) {
      await objects.create(o).catch((err: unknown) => {
        if (apiStatusCode(err) !== 409) throw err;
      });
    }
  });
  const renew = setInterval(() => {
    void coord
      .readNamespacedLease({ name, namespace: HOLD_NAMESPACE })
      .then((l) => coord.replaceNamespacedLease({ name, namespace: HOLD_NAMESPACE, body: { ...l, spec: { ...l.spec, renewTime: new k8s.V1MicroTime(Date.now()) } } }))
      .catch(() => undefined);
  }, (HOLD_SECONDS * 1000) / 3);
  renew.unref();
  let released = false;
  return {
    holder,
    release: async () => {
      if (released) return;
      released = true;
      clearInterval(renew);
      await locked(coord, holder, async () => {
        await coord.deleteNamespacedLease({ name, namespace: HOLD_NAMESPACE }).catch(() => undefined);
        const now = Date.now();
        const live = (await coord.listNamespacedLease({ namespace: HOLD_NAMESPACE, labelSelector: `${HOLD_LABEL}=${HOLD_VALUE}` })).items.filter((l) => !expired(l, now));
        if (live.length > 0) return;
        for (const o of [...grants()].reverse()) {
          const cur = await objects.read(o as k8s.KubernetesObject & { metadata: { name: string } }).catch(() => undefined);
          if (cur?.metadata?.annotations?.[INSTALLED_BY_HOLDERS] !== 'holders') continue;
          await objects.delete(cur).catch((err: unknown) => {
            if (apiStatusCode(err) !== 404) throw err;
          });
        }
      });
    },
  };
}
