// A node in memory for unit tests of the restart executor's pure logic: containers with states, and a runtime
// that can be made unavailable for a while (by the manual clock) or fail one call. Integration tests use the
// real runtimes.
import type { Clock } from '../../src/clock.js';
import { AgentError } from '../../src/errors.js';
import type { Operation } from '../../src/engine/operation.js';
import type { ExecutorDeps, OperationStore } from '../../src/engine/executor-deps.js';
import { FirstReader } from '../../src/engine/first-reads.js';
import { RestartExecutor } from '../../src/engine/restart-executor.js';
import { StandaloneStrategy } from '../../src/engine/standalone-strategy.js';
import type { NameSwap, Runtime } from '../../src/runtime/runtime.js';
import type { Container, ContainerDetail, ContainerSpec, ContainerState } from '../../src/runtime/types.js';
import { memoryLogger } from './memory-logger.js';
import type { ManualClock } from './manual-timers.js';

/** The runtime calls the executor makes, with an outage switch. */
export class FakeNode {
  readonly containers = new Map<string, ContainerDetail>();
  /** Calls fail with Unavailable while this returns true. */
  away: () => boolean = () => false;
  /** Told of every runtime call, by method, before it is made (a test may take the runtime away there). */
  onCall: (method: string) => void = () => undefined;
  /** Fails the next call of that method once with the given error. */
  failOnce = new Map<string, AgentError>();
  /** The runtime starts stopped containers again (Docker); by default a container runs once (CRI). */
  restartsStopped = false;
  /** The name swaps the executor asked for, in order. */
  readonly swaps: { call: 'swap' | 'restore'; swap: NameSwap }[] = [];
  private next = 1;

  constructor(private readonly clock: Clock) {}

  /** Adds a running container of pod p with the given image. */
  add(name: string, image: string): ContainerDetail {
    const id = `c${this.next++}`;
    const spec = { name, image, command: [], args: [], env: [], labels: {}, annotations: {}, attempt: 0 } as unknown as ContainerSpec;
    const c: ContainerDetail = { id, name, podId: 'p', attempt: 0, image, imageId: image, state: 'running', createdAt: new Date(this.clock.now()), labels: {}, annotations: {}, mounts: [], spec };
    this.containers.set(id, c);
    return c;
  }

  private gate(method: string): void {
    this.onCall(method);
    if (this.away()) throw new AgentError('Unavailable', `runtime is unavailable (${method})`);
    const e = this.failOnce.get(method);
    if (e) {
      this.failOnce.delete(method);
      throw e;
    }
  }

  private get(id: string): ContainerDetail {
    const c = this.containers.get(id);
    if (!c) throw new AgentError('NotFound', `container "${id}" not found`);
    return c;
  }

  /** The subset of Runtime the executor uses. */
  runtime(): Runtime {
    const rt = {
      kind: 'cri',
      capabilities: { restartsStopped: this.restartsStopped, pullReportsProgress: false, maxContainerName: 63 },
      getPod: async () => {
        this.gate('getPod');
        return { id: 'p', name: 'ns/p', namespace: 'ns', uid: 'u', ip: '10.0.0.2', labels: {}, annotations: {} };
      },
      listContainers: async (): Promise<Container[]> => {
        this.gate('listContainers');
        return [...this.containers.values()].map((c) => ({ ...c }));
      },
      inspectContainer: async (id: string): Promise<ContainerDetail> => {
        this.gate('inspectContainer');
        return { ...this.get(id) };
      },
      containerState: async (id: string): Promise<ContainerState> => {
        this.gate('containerState');
        return this.get(id).state;
      },
      createContainer: async (_pod: string, spec: ContainerSpec): Promise<string> => {
        this.gate('createContainer');
        const c = this.add(spec.name, spec.image);
        c.state = 'created';
        c.labels = { ...spec.labels };
        c.attempt = spec.attempt;
        c.spec = spec;
        return c.id;
      },
      startContainer: async (id: string) => {
        this.gate('startContainer');
        const c = this.get(id);
        if (c.state !== 'created' && !(this.restartsStopped && c.state === 'exited')) throw new AgentError('FailedPrecondition', `container "${id}" is ${c.state}`);
        c.state = c.image.includes('crash') ? 'exited' : 'running';
        if (c.state === 'exited') c.exitCode = 3;
      },
      stopContainer: async (id: string) => {
        this.gate('stopContainer');
        const c = this.get(id);
        if (c.state === 'running') c.state = 'exited';
      },
      removeContainer: async (id: string) => {
        this.gate('removeContainer');
        this.containers.delete(id);
      },
      replacementName: () => undefined,
      swapNames: async (swap: NameSwap) => void this.swaps.push({ call: 'swap', swap }),
      restoreNames: async (swap: NameSwap) => void this.swaps.push({ call: 'restore', swap }),
      exec: async () => ({ exitCode: 0, stdout: '', stderr: '' }),
    };
    return rt as unknown as Runtime;
  }

  /** A Pending operation that replaces container old with image newImage. */
  operation(old: ContainerDetail, newImage: string, opts: { minReadyMs?: number; timeoutMs?: number } = {}): Operation {
    const now = new Date(this.clock.now()).toISOString();
    return {
      id: 'op-1',
      podId: 'p',
      podName: 'ns/p',
      podIp: '10.0.0.2',
      state: 'Pending',
      request: { pod: 'ns/p', containers: [old.name], images: { [old.name]: newImage }, graceSeconds: 1, minReadyMs: opts.minReadyMs ?? 1000, timeoutMs: opts.timeoutMs ?? 600_000 },
      containers: [{ name: old.name, oldId: old.id, oldRuntimeName: '', oldImage: old.image, newImage, newAttempt: 1, newId: '', rollbackId: '', step: 'Waiting', steps: [{ step: 'Waiting', at: now }] }],
      createdAt: now,
      updatedAt: now,
    };
  }
}

/** The executor's deps to override in a test; the store's methods one by one (the others do nothing). */
export type FakeExecutorDeps = Partial<Omit<ExecutorDeps, 'store'>> & { store?: Partial<OperationStore> };

/** A restart executor on the fake node and the manual clock, with deps overridden where given. */
export function fakeExecutor(node: FakeNode, clock: ManualClock, deps: FakeExecutorDeps = {}): RestartExecutor {
  const runtime = deps.runtime ?? node.runtime();
  const log = deps.log ?? memoryLogger().logger;
  const draining = deps.draining ?? (() => false);
  const strategies = deps.strategies ?? [new StandaloneStrategy({ runtime, clock, log, draining, drainSignal: deps.drainSignal })];
  const store: OperationStore = {
    record: async () => undefined,
    firstRecord: () => undefined,
    publish: () => undefined,
    cancelled: () => new AbortController().signal,
    ...deps.store,
  };
  const reads = deps.reads ?? new FirstReader({ runtime, clock, log, strategies, draining, drainSignal: deps.drainSignal });
  return new RestartExecutor({
    puller: { ensure: async () => ({ pulled: false, digest: '' }) } as never,
    clock,
    draining,
    ...deps,
    runtime,
    log,
    strategies,
    store,
    reads,
  });
}

/** Runs op on the fake node with a restart executor, moving the manual clock until it ends; returns the end state. */
export async function runOnManualClock(node: FakeNode, clock: ManualClock, op: Operation, afterStep?: (step: string) => void): Promise<Operation> {
  const executor = fakeExecutor(node, clock, { afterStep: afterStep ? (_op, _t, step) => afterStep(step) : undefined });
  let done = false;
  const p = executor.run(op).finally(() => (done = true));
  for (let i = 0; !done && i < 100_000; i++) await clock.advance(50);
  await p;
  return op;
}
