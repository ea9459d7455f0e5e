// The one planning path of the engine: the pod a request names, found on the node (resolve), and its containers
// checked against the request and each claimed by a strategy (plan). A new request is planned as it is recorded;
// an operation that waited its turn behind another on its pod, or was resumed Pending, is planned again on the
// pod as it is then (planOnPodNow), since its containers may have changed meanwhile.
import { AgentError } from '../errors.js';
import type { Clock } from '../clock.js';
import type { Runtime } from '../runtime/runtime.js';
import type { Container, ContainerState, Pod } from '../runtime/types.js';
import type { TurnPlanner } from './executor-deps.js';
import type { ContainerTarget, Operation, RestartRequest } from './operation.js';
import { resolvePod } from './pod-resolver.js';
import { planRestart } from './restart-plan.js';
import type { RestartStrategy } from './restart-strategy.js';
import type { StepTrace } from './step-trace.js';

/** How many pod arguments the planner remembers the sandbox of. */
const LAST_PODS = 256;

/** What the planner needs. */
export interface PlannerDeps {
  runtime: Runtime;
  clock: Clock;
  /** Every strategy, in the order they are asked to claim a container (standalone last). */
  strategies: RestartStrategy[];
  /** Whether the plan may name kubelet-managed containers (Kubernetes mode: a kubelet strategy is among them). */
  allowKubelet: boolean;
  /** The node's pods are the kubelet's (see EngineDeps.kubeletPods). */
  kubeletPods?: boolean;
  trace: StepTrace;
}

/** The pods a request's argument may mean, listed, and the containers of the pod it named last time. */
export interface PodLook {
  pods: Pod[];
  /** The containers of the sandbox the same argument resolved to last time, listed beside the pods. */
  early?: { podId: string; containers: Promise<Container[]> };
}

/** A new request's plan: its pod, its containers, and the old containers' states as the plan's list gave them. */
export interface Planned {
  pod: Pod;
  containers: ContainerTarget[];
  states: Map<string, ContainerState>;
}

/** Finds the pod a request names and plans its containers. */
export class RestartPlanner implements TurnPlanner {
  /** The sandbox id each pod argument of a recent request resolved to, oldest first (see look). */
  private readonly lastPodOf = new Map<string, string>();

  constructor(private readonly d: PlannerDeps) {}

  /**
   * Lists the pods the argument may mean. The pod this argument named last time: its containers are listed
   * beside the pods, and that list is taken when the pods still resolve to it (an answer as fresh as a list made
   * after them). The pod's IP (a call per pod on CRI) is read by the executor, alongside its other first reads.
   */
  async look(id: string, arg: string): Promise<PodLook> {
    const guess = this.lastPodOf.get(arg.trim());
    const early = guess === undefined ? undefined : { podId: guess, containers: this.d.runtime.listContainers({ podId: guess, brief: true }) };
    early?.containers.catch(() => undefined);
    const pods = await this.podsFor(arg);
    this.d.trace.mark(id, 'pods listed');
    return { pods, early };
  }

  /**
   * Plans a new request on the pod it names among those looked up (see look). busy: another operation holds
   * the pod, so a container may be between instances (it is checked again at its turn). Refusals throw.
   */
  async plan(id: string, req: RestartRequest, look: PodLook, busy: (podId: string) => boolean): Promise<Planned> {
    const pod = resolvePod(look.pods, req.pod);
    const key = req.pod.trim();
    this.lastPodOf.delete(key);
    this.lastPodOf.set(key, pod.id);
    if (this.lastPodOf.size > LAST_PODS) this.lastPodOf.delete(this.lastPodOf.keys().next().value as string);
    const states = new Map<string, ContainerState>();
    const listed = look.early?.podId === pod.id ? look.early.containers : undefined;
    const containers = await this.targets(pod, req, busy(pod.id), id, listed, states);
    this.d.trace.mark(id, 'planned');
    return { pod, containers, states };
  }

  /** Plans a queued operation again from the pod's current containers (see TurnPlanner). */
  async planOnPodNow(op: Operation): Promise<void> {
    // The pod by id, or by name when its id changed: on Docker, replacing a pod of one's only container
    // gives the pod a new id.
    const pod = await this.d.runtime.getPod(op.podId).catch(async (err: unknown) => {
      if (!AgentError.is(err, 'NotFound')) throw err;
      return resolvePod(await this.podsFor(op.podName), op.podName);
    });
    const containers = await this.targets(pod, op.request, false, op.id);
    op.podId = pod.id;
    // The history of each container (its Waiting since the submit) is kept.
    op.containers = containers.map((t, i) => ({ ...t, steps: op.containers[i]?.steps ?? t.steps }));
  }

  /**
   * The pods a request for arg may mean. With kubeletPods and arg NAMESPACE/NAME: the sandboxes the kubelet made
   * for that pod, asked of the runtime alone (a list of every sandbox of a shared node took 16-22 ms at load 14),
   * when it has any by that name; planning then lists the chosen sandbox's containers by its id. Not by the
   * kubelet's labels: a container someone else made in that sandbox carries none, and a same-name one must be
   * seen, to refuse the request as ambiguous. Every pod otherwise (a pod the kubelet did not make, an id, a
   * refusal to word).
   */
  private async podsFor(arg: string): Promise<Pod[]> {
    const wanted = arg.trim();
    if (this.d.kubeletPods && /^[^/\s]+\/[^/\s]+$/.test(wanted)) {
      const own = await this.d.runtime.listPods({ withIp: false, kubeletPod: wanted });
      if (own.some((p) => p.name === wanted)) return own;
    }
    return this.d.runtime.listPods({ withIp: false });
  }

  /**
   * The pod's containers checked against the request (restart-plan.ts), each claimed by the first strategy that
   * takes it, and each checked by its strategy. Refusals throw, touching nothing.
   */
  private async targets(pod: Pod, req: RestartRequest, busy: boolean, id = '', listed?: Promise<Container[]>, states?: Map<string, ContainerState>): Promise<ContainerTarget[]> {
    // Only this pod's containers, and only what the list says (names, attempts, states, labels, the image as
    // created): on CRI each container's status would cost a call. The old containers are read in full next.
    // Listed by the pod's id, never the node's every container (a refusal names them all); listed already when
    // the request named the pod it named last time (look).
    const containers = await (listed ?? this.d.runtime.listContainers({ podId: pod.id, brief: true }));
    this.d.trace.mark(id, 'containers listed');
    const planned = planRestart(pod, containers, req, { allowKubelet: this.d.allowKubelet, busy });
    const now = new Date(this.d.clock.now()).toISOString();
    const out: ContainerTarget[] = [];
    for (const p of planned) {
      let chosen: RestartStrategy | undefined;
      for (const s of this.d.strategies) {
        if (await s.claim(pod, p, req)) {
          chosen = s;
          break;
        }
      }
      if (!chosen) throw new AgentError('Internal', `no strategy claimed container "${p.name}"`);
      this.d.trace.mark(id, `claimed ${p.name} (${chosen.name})`);
      out.push({
        name: p.name,
        strategy: chosen.name,
        oldId: p.current.id,
        oldRuntimeName: p.current.runtimeName ?? '',
        oldImage: p.current.image,
        newImage: p.newImage,
        newAttempt: p.newAttempt,
        newId: '',
        rollbackId: '',
        step: 'Waiting',
        steps: [{ step: 'Waiting', at: now }],
      });
      chosen.check?.(p, req);
      states?.set(p.current.id, p.current.state);
    }
    return out;
  }
}
