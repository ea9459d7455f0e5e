import type { KubeletRequest } from '../../src/kube/kubelet/steps.js';
import assert from 'node:assert/strict';
import type { CoreV1Event, V1ContainerStatus, V1EndpointSlice, V1Pod } from '@kubernetes/client-node';
import type { ContainerStep, ContainerTarget, Operation } from '../../src/engine/operation.js';
import type { StepContext } from '../../src/engine/restart-strategy.js';
import type { KubeApi } from '../../src/k8s/kube-api.js';
import { KubeletStrategy } from '../../src/kube/kubelet/strategy.js';
import { PodEvents } from '../../src/kube/pod-events.js';
import { READY_CONDITION } from '../../src/kube/ready-condition.js';
import { SHARED_NOTE } from '../../src/kube/drain/pod-drain.js';
import { AgentError } from '../../src/errors.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import type { ContainerDetail, ContainerState } from '../../src/runtime/types.js';
import { silentLogger } from '../../src/log.js';
import { ManualClock } from '../support/manual-timers.js';

const running = (id: string, image: string, restartCount = 0): V1ContainerStatus => ({
  name: 'app', image, imageID: '', ready: true, restartCount, containerID: `containerd://${id}`, state: { running: { startedAt: new Date() } },
});

/** An API server holding one pod; `kubelet` reacts to stops and spec patches as the test scripts it. */
class FakeApi implements KubeApi {
  conditions: { status: string; reason: string }[] = [];
  specPatches: string[] = [];
  events: CoreV1Event[] = [];
  afterImagePatch?: (image: string) => void;
  /** Called on every read of the pod, before it is answered. */
  onRead?: () => void;
  constructor(public pod: V1Pod) {}
  readPod(): Promise<V1Pod> {
    this.onRead?.();
    return Promise.resolve(structuredClone(this.pod));
  }
  patchPod(_ns: string, _n: string, patch: { spec: { containers: { image: string }[] } }): Promise<V1Pod> {
    const image = patch.spec.containers[0].image;
    this.specPatches.push(image);
    this.pod.spec!.containers[0].image = image;
    this.afterImagePatch?.(image);
    return this.readPod();
  }
  patchPodStatus(_ns: string, _n: string, patch: { status: { conditions: { type: string; status: string; reason: string }[] } }): Promise<V1Pod> {
    const c = patch.status.conditions[0];
    this.conditions.push({ status: c.status, reason: c.reason });
    this.pod.status!.conditions = [c as never];
    return this.readPod();
  }
  listEndpointSlices(): Promise<V1EndpointSlice[]> {
    return Promise.resolve([]);
  }
  createEvent(_ns: string, e: CoreV1Event): Promise<void> {
    this.events.push(e);
    return Promise.resolve();
  }
  patchEvent(): Promise<void> {
    return Promise.reject(new AgentError('NotFound', 'gone'));
  }
}

/** The runtime calls the strategy makes, counted. */
class FakeRuntime {
  execs = 0;
  stops = 0;
  state: ContainerState = 'running';
  onStop?: () => void;
  exec() {
    this.execs++;
    return Promise.resolve({ exitCode: 0, stdout: '', stderr: '' });
  }
  stopContainer() {
    this.stops++;
    this.state = 'exited';
    this.onStop?.();
    return Promise.resolve();
  }
  containerState() {
    return Promise.resolve(this.state);
  }
  /** What listContainers shows (undefined: it fails, and the gate waits for the API server's view). */
  listed?: { id: string; name: string; state: ContainerState }[];
  listContainers() {
    return this.listed ? Promise.resolve(this.listed) : Promise.reject(new Error('no list here'));
  }
  /** Image references the node has. */
  images = new Set<string>();
  inspectImage(ref: string) {
    return Promise.resolve(this.images.has(ref) ? { id: `sha256:${ref}` } : undefined);
  }
}

function setup(opts: { restartPolicy?: string; newImage?: string; step?: ContainerStep; narrate?: boolean } = {}) {
  const clock = new ManualClock({ sleepsAdvance: true });
  const pod: V1Pod = {
    metadata: { namespace: 'shop', name: 'web', uid: 'u1', generation: 1 },
    spec: { restartPolicy: opts.restartPolicy ?? 'Always', containers: [{ name: 'app', image: 'app:v1', lifecycle: { preStop: { exec: { command: ['sh', '-c', 'echo bye'] } } } }] },
    status: { podIP: '10.1.0.5', conditions: [], containerStatuses: [running('old', 'app:v1')] },
  };
  const api = new FakeApi(pod);
  const rt = new FakeRuntime();
  const log = silentLogger();
  const strategy = new KubeletStrategy({ api, runtime: rt as unknown as Runtime, events: new PodEvents(api, 'node1', clock, log), clock, log, pollMs: 100, narrate: opts.narrate });
  const t: ContainerTarget = {
    name: 'app', strategy: 'kubelet', oldId: 'old', oldRuntimeName: '', oldImage: 'app:v1', newImage: opts.newImage ?? 'app:v1', newAttempt: 1, newId: '', rollbackId: '',
    step: opts.step ?? 'Waiting', steps: [{ step: opts.step ?? 'Waiting', at: new Date(clock.now()).toISOString() }],
  };
  const op: Operation = {
    id: 'op1', podId: 'sb1', podName: 'shop/web', podIp: '10.1.0.5', state: 'Recreating',
    request: { pod: 'shop/web', containers: ['app'], images: {}, graceSeconds: 5, minReadyMs: 500, timeoutMs: 60_000 },
    containers: [t], createdAt: new Date(clock.now()).toISOString(), updatedAt: '',
  };
  const journaled: ContainerStep[] = [];
  const cut = { count: 0 };
  const ctx: StepContext = {
    deadline: clock.now() + 60_000,
    old: { state: 'running' } as ContainerDetail,
    step: (s) => {
      t.step = s;
      t.steps.push({ step: s, at: new Date(clock.now()).toISOString() });
      journaled.push(s);
      return Promise.resolve();
    },
    mark: (s) => {
      t.step = s;
      t.steps.push({ step: s, at: new Date(clock.now()).toISOString() });
    },
    markOf: (c, s) => {
      c.step = s;
      c.steps.push({ step: s, at: new Date(clock.now()).toISOString() });
    },
    save: () => Promise.resolve(),
    publish: () => undefined,
    verifying: () => undefined,
    cutShort: () => void cut.count++,
    trace: () => undefined,
    resumed: false,
  };
  return { clock, api, rt, strategy, t, op, ctx, journaled, pod, cut };
}

describe('kube: the kubelet restart strategy', () => {
  it('same image: drains, runs the preStop hook once, stops once, and verifies the new instance', async () => {
    const s = setup();
    s.rt.onStop = () => (s.api.pod.status!.containerStatuses = [running('new', 'app:v1', 1)]);
    assert.equal(await s.strategy.advance(s.op, s.t, s.ctx), true);
    // No readiness gate: nothing to drain, so Draining is journaled with the next step rather than on its own.
    assert.deepEqual(s.journaled, ['PreStop', 'Stopping', 'Verifying']);
    assert.ok(s.t.steps.some((x) => x.step === 'Draining'));
    assert.deepEqual(s.api.conditions, [], 'no condition write beside the stop of a pod that does not gate on it');
    assert.equal(s.rt.execs, 1);
    assert.equal(s.rt.stops, 1);
    assert.equal(s.t.newId, 'new');
    assert.equal(s.t.step, 'Done');
    assert.deepEqual(s.api.specPatches, []);
    assert.deepEqual(s.api.events.map((e) => e.reason), ['Draining', 'Killing']);
  });

  it('resumed after the preStop step was journaled: the hook is not run again, and the stop (not yet issued) follows once', async () => {
    const s = setup({ step: 'PreStop' });
    s.rt.onStop = () => (s.api.pod.status!.containerStatuses = [running('new', 'app:v1', 1)]);
    assert.equal(await s.strategy.advance(s.op, s.t, s.ctx), true);
    assert.equal(s.rt.execs, 0);
    assert.equal(s.rt.stops, 1);
    assert.deepEqual(s.journaled, ['Stopping', 'Verifying']);
  });

  it('resumed at Stopping: a container that already exited is not stopped a second time', async () => {
    const s = setup({ step: 'Stopping' });
    s.rt.state = 'exited';
    s.api.pod.status!.containerStatuses = [running('new', 'app:v1', 1)];
    assert.equal(await s.strategy.advance(s.op, s.t, s.ctx), true);
    assert.equal(s.rt.stops, 0);
    assert.equal(s.rt.execs, 0);
  });

  it('resumed at Stopping with the container still running past its grace period: stops it once', async () => {
    const s = setup({ step: 'Stopping' });
    s.rt.onStop = () => (s.api.pod.status!.containerStatuses = [running('new', 'app:v1', 1)]);
    assert.equal(await s.strategy.advance(s.op, s.t, s.ctx), true);
    assert.equal(s.rt.stops, 1);
  });

  it('new image: patches the spec (no Pulled of its own for an image it did not pull), never stops, and rolls back when the new instance crashes', async () => {
    const s = setup({ newImage: 'app:v2' });
    s.api.afterImagePatch = (image) => {
      s.api.pod.status!.containerStatuses =
        image === 'app:v2'
          ? [{ name: 'app', image, imageID: '', ready: false, restartCount: 1, containerID: 'containerd://n1', state: { terminated: { exitCode: 3, containerID: 'containerd://n1' } } }]
          : [running('back', 'app:v1', 2)];
    };
    assert.equal(await s.strategy.advance(s.op, s.t, s.ctx), false);
    assert.deepEqual(s.api.specPatches, ['app:v2', 'app:v1']);
    assert.equal(s.rt.stops, 0);
    assert.equal(s.rt.execs, 0);
    assert.equal(s.t.step, 'RolledBack');
    assert.equal(s.t.exitCode, 3);
    assert.equal(s.t.rollbackId, 'back');
    assert.equal(s.api.events.filter((e) => e.reason === 'Pulled').length, 0, "the kubelet's own Pulled says it");
    s.op.state = 'Failed';
    s.op.error = s.t.error;
    await s.strategy.finished(s.op);
    assert.deepEqual(s.api.conditions.at(-1), { status: 'True', reason: 'RolledBack' });
    assert.equal((s.api.pod.status!.conditions![0] as { type: string }).type, READY_CONDITION);
  });

  it("reports the kubelet's back-off and fails at once when it outlasts the deadline", async () => {
    const s = setup();
    s.rt.onStop = () =>
      (s.api.pod.status!.containerStatuses = [
        {
          name: 'app', image: 'app:v1', imageID: '', ready: false, restartCount: 1, containerID: 'containerd://old',
          state: { waiting: { reason: 'CrashLoopBackOff', message: 'back-off 5m0s restarting failed container=app' } },
          lastState: { terminated: { exitCode: 0, containerID: 'containerd://old', finishedAt: new Date(s.clock.now()) } },
        },
      ]);
    const began = s.clock.now();
    assert.equal(await s.strategy.advance(s.op, s.t, s.ctx), false);
    assert.match(s.t.error ?? '', /holds the next start back until .*after the operation's deadline/);
    assert.ok(s.clock.now() - began < 10_000, 'failed as soon as the back-off was seen, not at the deadline');
    assert.ok(s.api.events.some((e) => e.reason === 'BackOff'));
  });
});

describe('kube: the kubelet strategy, cancelled while verifying', () => {
  it('new image, cancelled before a new instance runs: the old image is put back (whatever the failure policy), RolledBack as Cancelled', async () => {
    const s = setup({ newImage: 'app:v2' });
    (s.op.request as KubeletRequest).failurePolicy = 'Fail';
    s.api.afterImagePatch = (image) => {
      if (image === 'app:v2') {
        s.api.pod.status!.containerStatuses = [{ name: 'app', image, imageID: '', ready: false, restartCount: 1, containerID: 'containerd://old', state: { waiting: { reason: 'ContainerCreating' } } }];
        s.op.cancelRequested = true;
      } else {
        s.api.pod.status!.containerStatuses = [running('back', 'app:v1', 2)];
      }
    };
    assert.equal(await s.strategy.advance(s.op, s.t, s.ctx), false);
    assert.deepEqual(s.api.specPatches, ['app:v2', 'app:v1'], JSON.stringify(s.t));
    assert.equal(s.t.step, 'RolledBack');
    assert.equal(s.t.reason, 'Cancelled');
    assert.equal(s.t.rollbackId, 'back');
    assert.match(s.t.error ?? '', /cancelled before a new instance of "app" ran; its old image app:v1 is put back/);
    assert.equal(s.cut.count, 0);
  });

  it('cancelled with the new instance running: verification ends at once, the instance is kept and the cut is reported', async () => {
    const s = setup({ newImage: 'app:v2' });
    s.op.request.minReadyMs = 60_000;
    s.api.afterImagePatch = (image) => (s.api.pod.status!.containerStatuses = [running('n1', image, 1)]);
    let readsSeenRunning = 0;
    s.api.onRead = () => {
      if (s.t.newId === 'n1' && ++readsSeenRunning === 2) s.op.cancelRequested = true;
    };
    const began = s.clock.now();
    assert.equal(await s.strategy.advance(s.op, s.t, s.ctx), true);
    assert.ok(s.clock.now() - began < 60_000, 'ended before the min-ready window');
    assert.equal(s.cut.count, 1);
    assert.equal(s.t.step, 'Done');
    assert.equal(s.t.newId, 'n1');
    assert.deepEqual(s.api.specPatches, ['app:v2'], 'the new image stays');
  });
});

describe('kube: the kubelet strategy, events and condition writes off the critical path', () => {
  it('new image: Pulling as the pull begins, Pulled when it ends, both on record before the spec is patched', async () => {
    const s = setup({ newImage: 'app:v2' });
    let eventsAtPatch: string[] = [];
    s.api.afterImagePatch = (image) => {
      eventsAtPatch = s.api.events.map((e) => e.reason ?? '');
      s.api.pod.status!.containerStatuses = [running(image === 'app:v2' ? 'new' : 'back', image, 1)];
    };
    await s.strategy.claim({ name: 'shop/web' } as never, { name: 'app', current: { labels: { 'io.kubernetes.pod.uid': 'u1' }, image: 'app:v1' } } as never, s.op.request);
    let pulled: (v: { pulled: boolean }) => void = () => undefined;
    s.strategy.pulling(s.op, s.t, new Promise((r) => (pulled = r)));
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(s.api.events.map((e) => e.reason), ['Pulling'], 'Pulling is recorded as the pull begins');
    assert.equal(s.api.events[0].message, 'Pulling image "app:v2"');
    pulled({ pulled: true });
    assert.equal(await s.strategy.advance(s.op, s.t, s.ctx), true);
    assert.deepEqual(eventsAtPatch.slice(0, 2), ['Pulling', 'Pulled']);
    assert.equal(s.api.events[1].message, 'Successfully pulled image "app:v2"');
    assert.equal(s.api.events.filter((e) => e.reason === 'Pulled').length, 1, 'Pulled once');
    assert.deepEqual(s.api.specPatches, ['app:v2']);
  });

  it('new image already on the node: no Pulling and no Pulled of the agent (the kubelet records "already present" itself)', async () => {
    const s = setup({ newImage: 'app:v2' });
    s.rt.images.add('app:v2');
    s.api.afterImagePatch = (image) => (s.api.pod.status!.containerStatuses = [running('new', image, 1)]);
    await s.strategy.claim({ name: 'shop/web' } as never, { name: 'app', current: { labels: { 'io.kubernetes.pod.uid': 'u1' }, image: 'app:v1' } } as never, s.op.request);
    s.strategy.pulling(s.op, s.t, Promise.resolve({ pulled: false }));
    assert.equal(await s.strategy.advance(s.op, s.t, s.ctx), true);
    assert.deepEqual(s.api.events.filter((e) => e.reason === 'Pulling' || e.reason === 'Pulled'), []);
    assert.deepEqual(s.api.specPatches, ['app:v2']);
  });

  it('new image already on the node as the operation is admitted: no pull event at all, before or after the patch', async () => {
    const s = setup({ newImage: 'app:v2' });
    s.rt.images.add('app:v2');
    let eventsAtPatch: string[] = [];
    s.api.afterImagePatch = (image) => {
      eventsAtPatch = s.api.events.map((e) => e.reason ?? '');
      s.api.pod.status!.containerStatuses = [running('new', image, 1)];
    };
    await s.strategy.claim({ name: 'shop/web' } as never, { name: 'app', current: { labels: { 'io.kubernetes.pod.uid': 'u1' }, image: 'app:v1' } } as never, s.op.request);
    s.strategy.admitted(s.op);
    s.strategy.pulling(s.op, s.t, Promise.resolve({ pulled: false }));
    assert.equal(await s.strategy.advance(s.op, s.t, s.ctx), true);
    assert.deepEqual(eventsAtPatch.filter((r) => r === 'Pulling' || r === 'Pulled'), [], 'nothing before the patch');
    assert.deepEqual(s.api.events.filter((e) => e.reason === 'Pulling' || e.reason === 'Pulled'), [], 'nor after');
    assert.deepEqual(s.api.specPatches, ['app:v2']);
  });

  it('new image not on the node as the operation is admitted: nothing then, Pulling and Pulled follow the pull', async () => {
    const s = setup({ newImage: 'app:v2' });
    s.api.afterImagePatch = (image) => (s.api.pod.status!.containerStatuses = [running('new', image, 1)]);
    await s.strategy.claim({ name: 'shop/web' } as never, { name: 'app', current: { labels: { 'io.kubernetes.pod.uid': 'u1' }, image: 'app:v1' } } as never, s.op.request);
    s.strategy.admitted(s.op);
    s.strategy.pulling(s.op, s.t, Promise.resolve({ pulled: true }));
    assert.equal(await s.strategy.advance(s.op, s.t, s.ctx), true);
    assert.deepEqual(s.api.events.map((e) => e.reason).slice(0, 2), ['Pulling', 'Pulled']);
    assert.equal(s.api.events.filter((e) => e.reason === 'Pulled').length, 1, 'Pulled once');
  });

  it('same image on a pod without a readiness gate: no condition write before or beside the stop, the outcome written once at the end', async () => {
    const s = setup();
    const written: number[] = [];
    const patchStatus = s.api.patchPodStatus.bind(s.api);
    s.api.patchPodStatus = async (ns, n, patch) => {
      written.push(s.rt.stops);
      return patchStatus(ns, n, patch);
    };
    s.rt.onStop = () => (s.api.pod.status!.containerStatuses = [running('new', 'app:v1', 1)]);
    assert.equal(await s.strategy.advance(s.op, s.t, s.ctx), true);
    assert.equal(s.rt.stops, 1);
    assert.deepEqual(written, [], 'nothing written to the pod status while restarting');
    await s.strategy.finished({ ...s.op, state: 'Succeeded' });
    assert.deepEqual(s.api.conditions.map((c) => `${c.status} ${c.reason}`), ['True Restarted']);
    assert.deepEqual(s.api.events.map((e) => e.reason), ['Draining', 'Killing'], 'its Draining Event says it keeps receiving traffic');
  });

  it('same image on a pod that gates on the condition: Draining is written before the stop', async () => {
    const s = setup();
    s.api.pod.spec!.readinessGates = [{ conditionType: READY_CONDITION }];
    s.rt.onStop = () => {
      assert.equal(s.api.conditions[0]?.reason, 'Draining', 'Draining written before the stop');
      s.api.pod.status!.containerStatuses = [running('new', 'app:v1', 1)];
    };
    assert.equal(await s.strategy.advance(s.op, s.t, s.ctx), true);
    assert.equal(s.rt.stops, 1);
  });

  for (const narrate of [false, true]) {
    it(`a gated restart's Events with --pod-events ${narrate ? 'all: Draining and Restarted besides Killing' : 'kubelet (the default): only Killing, the drain and the end in the condition'}`, async () => {
      const s = setup({ narrate });
      s.api.pod.spec!.readinessGates = [{ conditionType: READY_CONDITION }];
      s.rt.onStop = () => (s.api.pod.status!.containerStatuses = [running('new', 'app:v1', 1)]);
      assert.equal(await s.strategy.advance(s.op, s.t, s.ctx), true);
      await s.strategy.finished({ ...s.op, state: 'Succeeded' });
      assert.deepEqual(s.api.conditions.map((c) => c.reason), ['Draining', 'Restarted']);
      assert.deepEqual(s.api.events.map((e) => e.reason), narrate ? ['Draining', 'Killing', 'Restarted'] : ['Killing']);
    });
  }

  it('a failed restart records its Warning with --pod-events kubelet too', async () => {
    const s = setup();
    s.api.pod.spec!.readinessGates = [{ conditionType: READY_CONDITION }];
    s.api.pod.status!.containerStatuses = [];
    await s.strategy.finished({ ...s.op, state: 'Failed', error: 'boom', containers: [{ ...s.t, step: 'Stopped', steps: [{ step: 'Draining', at: '2026-01-01T00:00:00Z' }] }] });
    assert.deepEqual(s.api.events.map((e) => `${e.type} ${e.reason}`), ['Warning ReplacementFailed']);
  });
});

describe('kube: the kubelet strategy, the condition at the start (min-ready 0)', () => {
  /** A gated pod whose app container has a readiness probe; the new image's instance runs, not yet ready. */
  function gated(minReadyMs: number) {
    const s = setup({ newImage: 'app:v2' });
    s.op.request.minReadyMs = minReadyMs;
    s.api.pod.spec!.readinessGates = [{ conditionType: READY_CONDITION }];
    s.api.pod.spec!.containers[0].readinessProbe = { httpGet: { path: '/', port: 8080 } };
    /** Whether the app container was ready when each condition write landed. */
    const readyAtWrite: boolean[] = [];
    const patchStatus = s.api.patchPodStatus.bind(s.api);
    s.api.patchPodStatus = (ns, n, patch) => {
      readyAtWrite.push(s.api.pod.status!.containerStatuses![0].ready);
      return patchStatus(ns, n, patch);
    };
    return { ...s, readyAtWrite };
  }

  it('the condition goes True as the new instance starts, before it is ready; verification still waits for the ready', async () => {
    const s = gated(0);
    s.api.afterImagePatch = (image) => (s.api.pod.status!.containerStatuses = [{ ...running('n1', image, 1), ready: false }]);
    // The readiness probe passes a few reads after the condition went True.
    let readsAfterOpen = 0;
    s.api.onRead = () => {
      if (s.api.conditions.at(-1)?.reason === 'Restarted' && ++readsAfterOpen === 3) s.api.pod.status!.containerStatuses![0].ready = true;
    };
    assert.equal(await s.strategy.advance(s.op, s.t, s.ctx), true);
    assert.deepEqual(s.api.conditions, [
      { status: 'False', reason: 'Draining' },
      { status: 'True', reason: 'Restarted' },
    ]);
    assert.equal(s.readyAtWrite[1], false, 'True written while the new instance was not ready: the kubelet keeps the pod not Ready until it is');
    assert.ok(readsAfterOpen >= 3, 'verified only once the new instance was ready');
    assert.equal(s.t.newId, 'n1');
  });

  it('the condition opened at the runtime sight, before the downtime is known, is the one the end writes: two writes in all', async () => {
    const s = gated(0);
    let apiShowsNew = false;
    const trueWhileApiOld: boolean[] = [];
    const patchStatus = s.api.patchPodStatus;
    s.api.patchPodStatus = (ns, n, patch) => {
      if ((patch as { status: { conditions: { status: string }[] } }).status.conditions[0].status === 'True') trueWhileApiOld.push(!apiShowsNew);
      return patchStatus(ns, n, patch);
    };
    // The runtime shows the new instance at once; the API server's status only a few reads later.
    s.api.afterImagePatch = () => (s.rt.listed = [{ id: 'n1', name: 'app', state: 'running' }]);
    let reads = 0;
    s.api.onRead = () => {
      if (!s.rt.listed || ++reads < 4) return;
      apiShowsNew = true;
      s.api.pod.status!.containerStatuses = [{ ...running('n1', 'app:v2', 1), ready: reads >= 6 }];
    };
    assert.equal(await s.strategy.advance(s.op, s.t, s.ctx), true);
    await s.strategy.finished({ ...s.op, state: 'Succeeded' });
    assert.deepEqual(s.api.conditions.map((c) => `${c.status} ${c.reason}`), ['False Draining', 'True Restarted'], 'no third write to add the downtime');
    assert.deepEqual(trueWhileApiOld, [true], 'True written from the runtime sight, before the API server showed the new instance');
    assert.ok(s.t.downtimeMs !== undefined, 'the downtime is known by the end (it goes to the ContainerRestart)');
  });

  it('a new instance that crashes after the condition went True: False again before the old image is put back, never served', async () => {
    const s = gated(0);
    const atRollbackPatch: { status: string; reason: string }[][] = [];
    s.api.afterImagePatch = (image) => {
      if (image === 'app:v2') {
        s.api.pod.status!.containerStatuses = [{ ...running('n1', image, 1), ready: false }];
      } else {
        atRollbackPatch.push([...s.api.conditions]);
        s.api.pod.status!.containerStatuses = [running('back', 'app:v1', 2)];
      }
    };
    s.api.onRead = () => {
      if (s.api.conditions.at(-1)?.reason === 'Restarted') {
        s.api.pod.status!.containerStatuses = [{ name: 'app', image: 'app:v2', imageID: '', ready: false, restartCount: 1, containerID: 'containerd://n1', state: { terminated: { exitCode: 2, containerID: 'containerd://n1' } } }];
      }
    };
    assert.equal(await s.strategy.advance(s.op, s.t, s.ctx), false);
    assert.equal(s.t.step, 'RolledBack');
    assert.equal(s.t.exitCode, 2);
    assert.deepEqual(atRollbackPatch[0].map((c) => `${c.status} ${c.reason}`), ['False Draining', 'True Restarted', 'False Restarting']);
    assert.deepEqual(s.readyAtWrite.slice(0, 3), [true, false, false], 'the failed instance was never ready while the condition was True');
  });

  it('with min-ready above 0 the condition stays False until the new instance is verified', async () => {
    const s = gated(2000);
    s.api.afterImagePatch = (image) => (s.api.pod.status!.containerStatuses = [running('n1', image, 1)]);
    const began = s.clock.now();
    let trueAt = -1;
    const patchStatus = s.api.patchPodStatus;
    s.api.patchPodStatus = (ns, n, patch) => {
      if ((patch as { status: { conditions: { status: string }[] } }).status.conditions[0].status === 'True') trueAt = s.clock.now();
      return patchStatus(ns, n, patch);
    };
    assert.equal(await s.strategy.advance(s.op, s.t, s.ctx), true);
    assert.deepEqual(s.api.conditions.map((c) => c.reason), ['Draining', 'Restarted']);
    assert.ok(trueAt - began >= 2000, `True only after min-ready (at ${trueAt - began} ms)`);
  });
});

describe('kube: the kubelet strategy, one drain a pod whatever number of containers', () => {
  /** A gated pod of two containers, app and sidecar, both restarted with their image by one operation. */
  function twoContainers() {
    const s = setup();
    s.api.pod.spec!.readinessGates = [{ conditionType: READY_CONDITION }];
    s.api.pod.spec!.containers.push({ name: 'sidecar', image: 'side:v1' });
    const side = (id: string, restartCount = 0) => ({ ...running(id, 'side:v1', restartCount), name: 'sidecar' });
    s.api.pod.status!.containerStatuses = [running('old', 'app:v1'), side('old-side')];
    const sidecar: ContainerTarget = { ...structuredClone(s.t), name: 'sidecar', oldId: 'old-side', oldImage: 'side:v1', newImage: 'side:v1' };
    s.op.containers.push(sidecar);
    s.op.request.containers = ['app', 'sidecar'];
    // The kubelet starts the next instance of whichever container the agent stopped.
    const stopped: string[] = [];
    s.rt.stopContainer = (id?: string) => {
      stopped.push(id ?? '');
      const st = s.api.pod.status!.containerStatuses!;
      s.api.pod.status!.containerStatuses = id === 'old' ? [running('new', 'app:v1', 1), st[1]] : [st[0], side('new-side', 1)];
      return Promise.resolve();
    };
    const journaled: ContainerStep[] = [];
    const ctx: StepContext = {
      ...s.ctx,
      step: (x) => {
        sidecar.step = x;
        sidecar.steps.push({ step: x, at: new Date(s.clock.now()).toISOString() });
        journaled.push(x);
        return Promise.resolve();
      },
      mark: (x) => {
        sidecar.step = x;
        sidecar.steps.push({ step: x, at: new Date(s.clock.now()).toISOString() });
      },
    };
    return { ...s, sidecar, sideCtx: ctx, sideJournaled: journaled, stopped };
  }

  it('both containers restarted: the condition goes False once and True once, after the last one', async () => {
    const s = twoContainers();
    assert.equal(await s.strategy.advance(s.op, s.t, s.ctx), true);
    assert.deepEqual(s.api.conditions.map((c) => `${c.status} ${c.reason}`), ['False Draining'], 'the gate stays shut after the first container');
    assert.equal(await s.strategy.advance(s.op, s.sidecar, s.sideCtx), true);
    await s.strategy.finished({ ...s.op, state: 'Succeeded' });
    assert.deepEqual(s.api.conditions.map((c) => `${c.status} ${c.reason}`), ['False Draining', 'True Restarted']);
    assert.deepEqual(s.stopped, ['old', 'old-side']);
    assert.equal(s.journaled[0], 'Draining', 'the first container journals the drain before the condition is written');
    assert.ok(!s.sideJournaled.includes('Draining'), 'the second container has no drain of its own to journal');
    const detail = s.sidecar.steps.find((x) => x.step === 'Draining')?.detail ?? '';
    assert.ok(detail.startsWith(SHARED_NOTE), detail);
    assert.match(String((s.api.pod.status!.conditions![0] as { message?: string }).message), /restarted app \(app:v1\), sidecar \(side:v1\)/);
  });

  it('resumed with the first container done: the second goes within the drain on record, no second drain', async () => {
    const s = twoContainers();
    assert.equal(await s.strategy.advance(s.op, s.t, s.ctx), true);
    // An agent that restarts now reads the record back: a new strategy, nothing of the drain in memory.
    const log = silentLogger();
    const again = new KubeletStrategy({ api: s.api, runtime: s.rt as unknown as Runtime, events: new PodEvents(s.api, 'node1', s.clock, log), clock: s.clock, log, pollMs: 100 });
    assert.equal(await again.advance(s.op, s.sidecar, s.sideCtx), true);
    assert.deepEqual(s.api.conditions.map((c) => `${c.status} ${c.reason}`), ['False Draining', 'True Restarted']);
    assert.equal(s.sidecar.step, 'Done');
  });

  it('together (ordered false): both stopped before the first is verified, in one drain, the gate opened once', async () => {
    const s = twoContainers();
    s.op.request = { ...s.op.request, together: true } as KubeletRequest;
    const appStepAtStop: string[] = [];
    const stop = s.rt.stopContainer as (id?: string) => Promise<void>;
    s.rt.stopContainer = (id?: string) => {
      appStepAtStop.push(`${id}@${s.t.step}`);
      return stop(id);
    };
    assert.equal(await s.strategy.advance(s.op, s.t, s.ctx), true);
    assert.deepEqual(appStepAtStop, ['old@Stopping', 'old-side@Stopping'], 'the sidecar stopped with the app, after its preStop hook and before its verification');
    assert.equal(s.rt.execs, 1, "the app's preStop hook ran once");
    assert.equal(s.sidecar.step, 'Stopped', 'carried along to its stop');
    assert.deepEqual(s.api.conditions.map((c) => `${c.status} ${c.reason}`), ['False Draining']);
    assert.equal(await s.strategy.advance(s.op, s.sidecar, s.sideCtx), true);
    assert.deepEqual(s.stopped, ['old', 'old-side'], 'each stopped once');
    assert.deepEqual(s.api.conditions.map((c) => `${c.status} ${c.reason}`), ['False Draining', 'True Restarted']);
    assert.equal(s.sidecar.newId, 'new-side');
    assert.ok(!s.sideJournaled.includes('Stopping'), "the sidecar's stop was journaled with the app's step, not again by its own call");
  });

  it('together, image changes: one patch of the pod for both images', async () => {
    const s = twoContainers();
    s.op.request = { ...s.op.request, together: true } as KubeletRequest;
    s.t.newImage = 'app:v2';
    s.sidecar.newImage = 'side:v2';
    const patches: unknown[] = [];
    s.api.patchPod = (_ns, _n, patch: { spec: { containers: { name: string; image: string }[] } }) => {
      patches.push(patch);
      for (const c of patch.spec.containers) s.api.pod.spec!.containers.find((x) => x.name === c.name)!.image = c.image;
      s.api.pod.status!.containerStatuses = [running('new', 'app:v2', 1), { ...running('new-side', 'side:v2', 1), name: 'sidecar' }];
      return s.api.readPod();
    };
    assert.equal(await s.strategy.advance(s.op, s.t, s.ctx), true);
    assert.equal(await s.strategy.advance(s.op, s.sidecar, s.sideCtx), true);
    assert.deepEqual(patches, [{ spec: { containers: [{ name: 'app', image: 'app:v2' }, { name: 'sidecar', image: 'side:v2' }] } }]);
    assert.deepEqual(s.stopped, []);
    assert.deepEqual(s.api.conditions.map((c) => `${c.status} ${c.reason}`), ['False Draining', 'True Restarted']);
  });

  it('together, the first fails and is rolled back: the one stopped with it is verified to its end, the gate opened once by the end', async () => {
    const s = twoContainers();
    s.op.request = { ...s.op.request, together: true } as KubeletRequest;
    s.t.newImage = 'app:v2';
    s.api.patchPod = (_ns, _n, patch: { spec: { containers: { name: string; image: string }[] } }) => {
      for (const c of patch.spec.containers) {
        s.api.pod.spec!.containers.find((x) => x.name === c.name)!.image = c.image;
        s.api.pod.status!.containerStatuses![0] =
          c.image === 'app:v2'
            ? { name: 'app', image: c.image, imageID: '', ready: false, restartCount: 1, containerID: 'containerd://n1', state: { terminated: { exitCode: 3, containerID: 'containerd://n1' } } }
            : running('back', 'app:v1', 2);
      }
      return s.api.readPod();
    };
    assert.equal(await s.strategy.advance(s.op, s.t, s.ctx), false);
    assert.equal(s.t.step, 'RolledBack');
    assert.equal(s.sidecar.step, 'Stopped', 'stopped together with the app');
    // The executor takes the containers already under way to their end.
    assert.equal(await s.strategy.advance(s.op, s.sidecar, s.sideCtx), true);
    assert.deepEqual(s.api.conditions.map((c) => `${c.status} ${c.reason}`), ['False Draining'], 'no way back while a container of the pod failed');
    await s.strategy.finished({ ...s.op, state: 'Failed', error: s.t.error });
    assert.deepEqual(s.api.conditions.map((c) => `${c.status} ${c.reason}`), ['False Draining', 'True RolledBack']);
    assert.deepEqual(s.stopped, ['old-side']);
  });

  it('the first container fails: the second is never touched and the end opens the gate once', async () => {
    const s = twoContainers();
    s.t.newImage = 'app:v2';
    s.api.afterImagePatch = (image) => {
      s.api.pod.status!.containerStatuses![0] =
        image === 'app:v2'
          ? { name: 'app', image, imageID: '', ready: false, restartCount: 1, containerID: 'containerd://n1', state: { terminated: { exitCode: 3, containerID: 'containerd://n1' } } }
          : running('back', 'app:v1', 2);
    };
    assert.equal(await s.strategy.advance(s.op, s.t, s.ctx), false);
    assert.equal(s.t.step, 'RolledBack');
    await s.strategy.finished({ ...s.op, state: 'Failed', error: s.t.error });
    assert.deepEqual(s.api.conditions.map((c) => `${c.status} ${c.reason}`), ['False Draining', 'True RolledBack']);
    assert.deepEqual(s.stopped, []);
    assert.equal(s.sidecar.step, 'Waiting');
  });
});

describe('kube: the kubelet strategy and sandboxes no kubelet made', () => {
  const foreign = { name: 'app', current: { labels: {}, image: 'app:v1' } } as never;
  it('refuses a container without the kubelet pod uid label (an RPC restart too), reason PodNotInApiServer, without reading the API server', async () => {
    const s = setup();
    let reads = 0;
    s.api.onRead = () => void reads++;
    await assert.rejects(s.strategy.claim({ name: 'shop/loose' } as never, foreign, s.op.request), (err: unknown) => {
      assert.ok(err instanceof AgentError);
      assert.equal(err.kind, 'FailedPrecondition');
      assert.equal(err.reason, 'PodNotInApiServer');
      assert.match(err.message, /pod shop\/loose is a sandbox no kubelet made \(container app has no io\.kubernetes\.pod\.uid label\).*nothing was touched/);
      return true;
    });
    assert.equal(reads, 0);
    assert.equal(s.rt.stops, 0);
  });

  it('with standalonePods (--container-restart-standalone-pods) leaves it to the standalone strategy', async () => {
    const s = setup();
    const log = silentLogger();
    const open = new KubeletStrategy({ api: s.api, runtime: s.rt as unknown as Runtime, events: new PodEvents(s.api, 'node1', s.clock, log), clock: s.clock, log, standalonePods: true });
    assert.equal(await open.claim({ name: 'shop/loose' } as never, foreign, s.op.request), false);
  });
});
