// The shape of a coordinated object (an InPlaceRollout, a SidecarSet) as read from the API server: the metadata a
// coordinator reads, its spec and its status.

/** The metadata a coordinator reads of the objects it coordinates. */
export interface CoordinatedMeta {
  name: string;
  /** Absent for a cluster-scoped object. */
  namespace?: string;
  uid?: string;
  generation?: number;
  resourceVersion?: string;
  labels?: Record<string, string>;
  creationTimestamp?: string | Date;
  deletionTimestamp?: string | Date;
}

/** A coordinated object of spec S and status T. */
export interface Coordinated<S, T> {
  apiVersion?: string;
  kind?: string;
  metadata: CoordinatedMeta;
  spec: S;
  status?: T;
}
