// A label selector as the API server's list and watch requests take it.

/** The selector `k1=v1,k2=v2` that matches objects carrying every pair of labels. */
export function selectorFor(labels: Record<string, string>): string {
  return Object.entries(labels)
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
}
