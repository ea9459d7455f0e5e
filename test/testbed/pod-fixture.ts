// A test pod on a real runtime: the one interface the CRI and Docker test fixtures implement, so tests,
// the demo and the benchmarks can set up the same pod on either runtime.

/** One container of a test pod. */
export interface TestContainerSpec {
  name: string;
  image: string;
  /** Replaces the image entrypoint. */
  command?: string[];
  /** Replaces the image cmd. */
  args?: string[];
  env?: Record<string, string>;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

/** A pod to create: its containers all join one network namespace and mount the same volume. */
export interface TestPodSpec {
  name: string;
  /** Defaults to 'default'. */
  namespace?: string;
  containers: TestContainerSpec[];
  /** A host directory every container mounts at mountPath. */
  volume?: { hostPath: string; mountPath: string };
}

/** A created test pod. */
export interface TestPod {
  /** Sandbox id (CRI) or sandbox container id (Docker). */
  podId: string;
  /** `namespace/name`. */
  name: string;
  /** Container id by container name, all started. */
  containerIds: Record<string, string>;
}

/** Creates and removes test pods on one runtime. */
export interface PodFixture {
  /** Creates the pod and starts all its containers. */
  create(spec: TestPodSpec): Promise<TestPod>;
  /** Stops and removes the pod and every container in it; succeeds when it is already gone. */
  remove(pod: TestPod): Promise<void>;
  /** Releases connections. */
  close(): void;
}
