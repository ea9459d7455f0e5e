// `inplacectl --kubeconfig FILE restart ...`: the restart as a ContainerRestart object, which the agent on the
// pod's node runs; followed to its end and printed as the RPC path prints it, with the same exit statuses.
import { systemClock } from '../clock.js';
import { AgentError } from '../errors.js';
import { loadTarget, namespaceOf } from './kube-target.js';
import { ContainerRestartApi } from '../controllers/container-restart/api.js';
import { followContainerRestart } from './follow-container-restart.js';
import { operationView, type OperationRecord } from './operation-view.js';
import { CR_GROUP, CR_KIND, CR_VERSION, isFinished, refusal, type ContainerRestart } from '../controllers/container-restart/types.js';
import { restartSummary } from './render.js';
import { structured, type OutputFormat } from './output.js';
import { ProgressPrinter } from './progress.js';
import { operationFromWire, operationToWire, type OperationView } from '../api/convert.js';

/** The view inplacectl prints, from an operation rebuilt out of a ContainerRestart. */
function toView(op: OperationRecord): OperationView {
  return operationFromWire(operationToWire(op) as Parameters<typeof operationFromWire>[0]);
}

/** What the command was asked. Durations in ms; undefined leaves the agent's default. */
export interface KubeRestartArgs {
  kubeconfig?: string;
  /** kubectl's --context and -n (the namespace of a POD given without one). */
  context?: string;
  namespace?: string;
  pod: string;
  containers: string[];
  images: Record<string, string>;
  graceMs?: number;
  minReadyMs?: number;
  timeoutMs?: number;
  /** --request-timeout as given. */
  requestTimeout?: string;
  wait: boolean;
  format: OutputFormat;
  t0: number;
}

/** How long to wait for an agent to take the request when no --timeout is given. */
const DEFAULT_TAKE_DEADLINE_MS = 10 * 60_000;
/** When to say that no agent has taken the request yet. */
const NOTICE_AFTER_MS = 15_000;

/** The object for a request (whole seconds: durations are rounded up, as the RPC path rounds the grace). */
export function containerRestartFor(a: Omit<KubeRestartArgs, 'kubeconfig' | 'context' | 'namespace' | 'requestTimeout' | 'wait' | 'format' | 't0'>, defaultNamespace: string): ContainerRestart {
  const slash = a.pod.indexOf('/');
  const namespace = slash > 0 ? a.pod.slice(0, slash) : defaultNamespace;
  const podName = slash > 0 ? a.pod.slice(slash + 1) : a.pod;
  const secs = (ms: number | undefined) => (ms === undefined ? undefined : Math.ceil(ms / 1000));
  const strategy = { gracePeriodSeconds: secs(a.graceMs), minReadySeconds: secs(a.minReadyMs) };
  return {
    apiVersion: `${CR_GROUP}/${CR_VERSION}`,
    kind: CR_KIND,
    metadata: { generateName: `${podName.slice(0, 40)}-`, namespace },
    spec: {
      podName,
      containers: a.containers.map((name) => (a.images[name] ? { name, image: a.images[name] } : { name })),
      strategy: JSON.parse(JSON.stringify(strategy)) as typeof strategy,
      ...(a.timeoutMs !== undefined ? { activeDeadlineSeconds: secs(a.timeoutMs) } : {}),
    },
  };
}

/** Creates the object and follows it; resolves with the exit status (0 succeeded, 1 failed or refused). */
export async function kubeRestart(a: KubeRestartArgs): Promise<number> {
  const json = a.format !== 'text';
  const kc = await loadTarget(a);
  const api = new ContainerRestartApi(kc, 'user');
  const ns = namespaceOf(kc, a);
  const unknownImage = Object.keys(a.images).find((n) => !a.containers.includes(n));
  if (unknownImage) throw new AgentError('InvalidArgument', `--image names container ${unknownImage}, which is not among those to restart (${a.containers.join(', ')})`);
  const created = await api.create(containerRestartFor(a, ns));
  const ref = `${created.metadata.namespace}/${created.metadata.name}`;
  if (!a.wait) {
    process.stdout.write(json ? structured(a.format, created) + '\n' : `containerrestart ${ref}\n`);
    return 0;
  }
  const first = operationView(created);
  if (!json) process.stdout.write(`operation ${first.id} on pod ${first.podName} (containerrestart ${ref})\n`);

  const takeDeadline = a.t0 + (a.timeoutMs ?? DEFAULT_TAKE_DEADLINE_MS);
  let taken = false;
  let noticed = false;
  const printer = new ProgressPrinter();
  const seen = new Map<string, OperationView['containers'][number]['steps']>();
  let last = created;
  const it = followContainerRestart(api, created, systemClock);
  // One next() at a time: a timed-out wait keeps its pending next() for the following round.
  let pending: Promise<IteratorResult<ContainerRestart>> | undefined;
  try {
    for (;;) {
      const waitFor = taken ? undefined : Math.max(0, (noticed ? takeDeadline : Math.min(takeDeadline, a.t0 + NOTICE_AFTER_MS)) - Date.now());
      pending ??= it.next();
      const next = await withTimeout(pending, waitFor);
      if (next !== 'timeout') pending = undefined;
      if (next === 'timeout') {
        if (Date.now() >= takeDeadline) {
          throw new AgentError('DeadlineExceeded', `no agent took ContainerRestart ${ref} in time (is inplace-agent running with a kubeconfig on the node of pod ${first.podName}?); the object is left in place`);
        }
        noticed = true;
        if (!json) process.stdout.write(`waiting for the agent on the node of pod ${first.podName} to take it\n`);
        continue;
      }
      if (next.done) break;
      last = next.value;
      taken ||= !!last.status?.operationId;
      const op = withSeenSteps(toView(operationView(last)), seen);
      if (!json) for (const line of printer.next(op)) process.stdout.write(line + '\n');
      if (isFinished(last.status?.phase)) break;
    }
  } finally {
    // Not awaited: it would wait for a pending next() that may never come (the process exits anyway).
    void it.return(undefined);
  }
  const refused = refusal(last);
  if (refused) throw new AgentError('FailedPrecondition', refused);
  const end = operationView(last);
  process.stdout.write((json ? structured(a.format, end) : restartSummary(toView(end))) + '\n');
  return end.state === 'Succeeded' ? 0 : 1;
}

/** The promise's value, or 'timeout' after ms (never with ms undefined). */
async function withTimeout<T>(p: Promise<T>, ms: number | undefined): Promise<T | 'timeout'> {
  if (ms === undefined) return p;
  let timer: NodeJS.Timeout | undefined;
  const res = await Promise.race([p, new Promise<'timeout'>((r) => (timer = setTimeout(() => r('timeout'), ms)))]);
  clearTimeout(timer);
  return res;
}

/**
 * The object's status holds each container's current step, not its history: the steps are gathered as they are
 * seen (seen, per container), so the progress printer prints each once, in order. Steps written between two
 * reads of the object are not seen.
 */
function withSeenSteps(op: OperationView, seen: Map<string, OperationView['containers'][number]['steps']>): OperationView {
  return {
    ...op,
    containers: op.containers.map((c) => {
      const steps = seen.get(c.name) ?? [];
      if (c.step !== 'Waiting' && steps.at(-1)?.step !== c.step) steps.push({ step: c.step, at: op.updatedAt });
      seen.set(c.name, steps);
      return { ...c, steps: [...steps] };
    }),
  };
}
