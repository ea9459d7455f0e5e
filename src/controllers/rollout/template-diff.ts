// What differs between two pod templates of one workload, sorted by what can change in place: container images
// (the kubelet restarts just that container), labels and annotations (a pod patch changes them), and everything
// else (named by its field path, so that a rollout that cannot go on says why).
import { sameJson } from '../../same-json.js';

/** A pod template as a ControllerRevision stores it (API field names). */
export interface PodTemplate {
  metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> };
  spec?: { containers?: { name: string; image?: string }[]; [field: string]: unknown };
}

/** The differences between two templates. */
export interface TemplateDiff {
  /** Containers whose image changed: name → new image. */
  images: Record<string, string>;
  /** Labels to set (a value) or remove (null). */
  labels: Record<string, string | null>;
  /** Annotations to set (a value) or remove (null). */
  annotations: Record<string, string | null>;
  /** Field paths that differ beyond those (e.g. `spec.containers[app].env`): not changeable in place. */
  other: string[];
}


/** Keys whose values differ between two string maps: new value, or null for a key that is gone. */
export function mapChanges(from: Record<string, string> | undefined, to: Record<string, string> | undefined): Record<string, string | null> {
  const out: Record<string, string | null> = {};
  for (const [k, v] of Object.entries(to ?? {})) if (from?.[k] !== v) out[k] = v;
  for (const k of Object.keys(from ?? {})) if (!(k in (to ?? {}))) out[k] = null;
  return out;
}

/** The fields of two objects that differ, as paths under prefix (one level deep). */
function fieldDiffs(a: Record<string, unknown>, b: Record<string, unknown>, prefix: string): string[] {
  const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort();
  return keys.filter((k) => !sameJson(a[k], b[k])).map((k) => `${prefix}.${k}`);
}

/** What differs from template `from` to template `to`. */
export function diffTemplates(from: PodTemplate, to: PodTemplate): TemplateDiff {
  const diff: TemplateDiff = { images: {}, labels: mapChanges(from.metadata?.labels, to.metadata?.labels), annotations: mapChanges(from.metadata?.annotations, to.metadata?.annotations), other: [] };
  const a = { ...(from.spec ?? {}) };
  const b = { ...(to.spec ?? {}) };
  const ca = (a.containers ?? []) as { name: string; image?: string; [f: string]: unknown }[];
  const cb = (b.containers ?? []) as { name: string; image?: string; [f: string]: unknown }[];
  delete a.containers;
  delete b.containers;
  if (ca.map((c) => c.name).join('\0') !== cb.map((c) => c.name).join('\0')) {
    diff.other.push('spec.containers');
  } else {
    for (const [i, c] of cb.entries()) {
      const old = ca[i];
      if (old.image !== c.image && c.image) diff.images[c.name] = c.image;
      diff.other.push(...fieldDiffs({ ...old, image: undefined }, { ...c, image: undefined }, `spec.containers[${c.name}]`));
    }
  }
  diff.other.push(...fieldDiffs(a, b, 'spec'));
  return diff;
}
