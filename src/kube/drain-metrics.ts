// What the drain before a stop reports about itself: how long each of its parts took. An interface, so the
// strategy and the data-plane wait depend on no metrics library (the daemon passes a prom-client one).

/** The parts of a drain, as the `part` label of inplace_drain_duration_seconds. */
export const DrainParts = {
  /** Waiting until the pod's address left every EndpointSlice that held it. */
  Slices: 'slices',
  /** Waiting until the data plane (kube-proxy's rules) stopped sending the pod new connections. */
  DataPlane: 'dataplane',
} as const;

/** One of DrainParts. */
export type DrainPart = (typeof DrainParts)[keyof typeof DrainParts];

/** Where the drain reports each part once it has ended: completed (true) or cut by its bound (false). */
export interface DrainMetrics {
  observe(part: DrainPart, seconds: number, completed: boolean): void;
}
