// A LabelSelector (matchLabels; matchExpressions In, NotIn, Exists, DoesNotExist) matched against labels, as the
// API server matches it and as deploy/sidecarset-injection.yaml does in CEL, and written as a list request's
// labelSelector string.
import type { V1LabelSelector } from '../../k8s/client.js';

/** Whether labels satisfy the selector; an empty or absent selector matches everything. */
export function selectorMatches(sel: V1LabelSelector | undefined, labels: Record<string, string> | undefined): boolean {
  const l = labels ?? {};
  if (!sel) return true;
  for (const [k, v] of Object.entries(sel.matchLabels ?? {})) if (l[k] !== v) return false;
  for (const e of sel.matchExpressions ?? []) {
    const has = Object.prototype.hasOwnProperty.call(l, e.key);
    const inValues = has && (e.values ?? []).includes(l[e.key] as string);
    const ok = e.operator === 'In' ? inValues : e.operator === 'NotIn' ? !inValues : e.operator === 'Exists' ? has : e.operator === 'DoesNotExist' ? !has : false;
    if (!ok) return false;
  }
  return true;
}

/** The selector as a list request's labelSelector (`k=v,k in (a,b),k notin (a),k,!k`); '' for an empty one. */
export function selectorString(sel: V1LabelSelector | undefined): string {
  if (!sel) return '';
  const parts = Object.entries(sel.matchLabels ?? {}).map(([k, v]) => `${k}=${v}`);
  for (const e of sel.matchExpressions ?? []) {
    const values = (e.values ?? []).join(',');
    if (e.operator === 'In') parts.push(`${e.key} in (${values})`);
    else if (e.operator === 'NotIn') parts.push(`${e.key} notin (${values})`);
    else if (e.operator === 'Exists') parts.push(e.key);
    else if (e.operator === 'DoesNotExist') parts.push(`!${e.key}`);
  }
  return parts.join(',');
}
