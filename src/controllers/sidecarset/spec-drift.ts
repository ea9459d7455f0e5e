// Whether a running pod's sidecar still has the SidecarSet's current spec, its image aside. Only the image of a
// running container can change in place; a change of anything else (env, command, mounts, probes, resources)
// reaches new pods only, through the injection, and the status counts the pods left on an older spec.
//
// The pod's container is what the injection wrote plus what the API server added at admission, so "the same" is:
//   every field the SidecarSet writes is in the pod's container with the same value (objects field by field,
//     lists item by item and of the same length, resource quantities by their value: "0.1" is "100m");
//   a field the pod's container has and the SidecarSet does not is a removed field, unless the API server
//     fills it in itself (DEFAULTED below);
//   the ServiceAccount token mount the API server adds to every container is not the SidecarSet's.

/** Container fields the API server (or LimitRanger) fills in when the pod's spec leaves them out. */
const DEFAULTED = new Set(['imagePullPolicy', 'terminationMessagePath', 'terminationMessagePolicy', 'resources', 'resizePolicy']);
/** Where the API server mounts the ServiceAccount token into every container. */
const TOKEN_MOUNT_PATH = '/var/run/secrets/kubernetes.io/serviceaccount';

const SUFFIX: Record<string, number> = { m: 1e-3, '': 1, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18, Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, Pi: 2 ** 50, Ei: 2 ** 60 };

/** A resource quantity's value ("100m" 0.1, "1Gi" 2^30, "1e3" 1000); undefined when it is none. */
export function quantityValue(q: unknown): number | undefined {
  if (typeof q === 'number') return q;
  if (typeof q !== 'string') return undefined;
  const m = /^([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$/.exec(q.trim());
  const n = m ? Number(m[1]) * (SUFFIX[m[2] ?? ''] ?? NaN) : NaN;
  return Number.isFinite(n) ? n : undefined;
}

const absent = (v: unknown) => v === undefined || v === null || (Array.isArray(v) && v.length === 0) || (typeof v === 'object' && v !== null && Object.values(v).every((x) => x === undefined));

/** Whether got carries every field of want with the same value (quantities by value inside `resources`). */
function covers(want: unknown, got: unknown, quantities: boolean): boolean {
  if (Array.isArray(want)) return Array.isArray(got) && got.length === want.length && want.every((w, i) => covers(w, got[i], quantities));
  if (typeof want === 'object' && want !== null) {
    if (typeof got !== 'object' || got === null || Array.isArray(got)) return false;
    return Object.entries(want).every(([k, w]) => w === undefined || covers(w, (got as Record<string, unknown>)[k], quantities));
  }
  if (want === got) return true;
  const [a, b] = [quantityValue(want), quantityValue(got)];
  return quantities && a !== undefined && a === b;
}

/** Whether the pod's container differs from the SidecarSet's container spec in anything but the image. */
export function differsBeyondImage(want: object, got: object): boolean {
  const w = { ...(want as Record<string, unknown>) };
  const g = { ...(got as Record<string, unknown>) };
  delete w.image;
  delete g.image;
  if (Array.isArray(g.volumeMounts)) g.volumeMounts = (g.volumeMounts as { mountPath?: string }[]).filter((m) => m.mountPath !== TOKEN_MOUNT_PATH);
  for (const [k, v] of Object.entries(g)) if (absent(v)) delete g[k];
  for (const [k, v] of Object.entries(w)) if (absent(v)) delete w[k];
  for (const k of Object.keys(w)) if (!covers(w[k], g[k], k === 'resources')) return true;
  return Object.keys(g).some((k) => !(k in w) && !DEFAULTED.has(k));
}
