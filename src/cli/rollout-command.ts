// `inplacectl rollout status|pause|resume|history|undo NAME`: InPlaceRollouts through the Kubernetes API (no agent
// socket); history and undo where they add to kubectl's (rollout-history.ts).
// The Kubernetes client is loaded only when one of these runs.
import type { Command } from 'commander';
import { durationFlagMs } from '../duration.js';
import { MIN_WATCH_INTERVAL_MS } from './prewarm-command.js';
import { loadTarget, namespaceOf, type KubeTarget } from './kube-target.js';
import { structured, type OutputFormat } from './output.js';
import type { InPlaceRollout } from '../controllers/rollout/types.js';
import { renderHistory, undoTarget } from './rollout-history.js';

/** Bad usage (exit 2): thrown as this so main maps it. */
export class RolloutUsageError extends Error {}

interface RolloutGlobals extends KubeTarget {
  output: OutputFormat;
}

/** The rollout's status as text lines. */
export function renderRolloutStatus(r: InPlaceRollout): string {
  const s = r.status ?? {};
  const ref = r.spec.targetRef;
  const stale = s.observedGeneration !== undefined && s.observedGeneration !== r.metadata.generation ? ' (status not yet of the latest spec)' : '';
  const lines = [
    `${r.metadata.namespace ?? 'default'}/${r.metadata.name}: ${s.phase ?? 'Pending'}${r.spec.paused ? ' (paused)' : ''}${stale}`,
    `  target      ${ref.kind} ${ref.name}`,
    `  revision    ${s.currentRevision ?? '-'} -> ${s.updateRevision ?? '-'}`,
    `  pods        ${s.updatedReplicas ?? 0}/${s.replicas ?? 0} updated, ${s.readyReplicas ?? 0} ready`,
  ];
  if (s.podsInFlight?.length) lines.push(`  in flight   ${s.podsInFlight.join(', ')}`);
  for (const f of s.failures ?? []) lines.push(`  failed      pod ${f.pod}${f.container ? ` container ${f.container}` : ''}: ${f.reason}${f.exitCode !== undefined ? ` (exit code ${f.exitCode})` : ''}`);
  if (s.message) lines.push(`  message     ${s.message}`);
  if (s.coordinator) lines.push(`  coordinator ${s.coordinator}`);
  return lines.join('\n');
}

/** Whether `status --watch` stops here, and with which exit status. */
export function watchEnd(r: InPlaceRollout): number | undefined {
  const s = r.status;
  if (!s || s.observedGeneration !== r.metadata.generation) return undefined;
  if (s.phase === 'Succeeded') return 0;
  if (s.phase === 'Failed') return 1;
  if (s.phase === 'Paused' && (s.failures?.length ?? 0) > 0) return 1;
  return undefined;
}

async function access(g: RolloutGlobals, namespace: string | undefined) {
  let kc;
  try {
    kc = await loadTarget(g);
  } catch (err) {
    throw new RolloutUsageError((err as Error).message);
  }
  const { KubeRolloutApi } = await import('../controllers/rollout/rollout-api.js');
  const { KubeDeploymentApi } = await import('../controllers/rollout/workloads/deployment-api.js');
  // -n of the subcommand, else kubectl-inplace's global -n, else the context's.
  const ns = namespaceOf(kc, { namespace: namespace ?? g.namespace });
  return { api: new KubeRolloutApi(kc, 'user'), deployments: new KubeDeploymentApi(kc), ns };
}

/** What `access` gives a rollout subcommand: the API, the Deployments' API, the namespace. */
type RolloutAccess = Awaited<ReturnType<typeof access>>;

/** The rollout ns/name, or a usage error saying there is none. */
async function rolloutNamed(api: RolloutAccess['api'], ns: string, name: string): Promise<InPlaceRollout> {
  const r = await api.getRollout(ns, name);
  if (!r) throw new RolloutUsageError(`no InPlaceRollout ${ns}/${name}`);
  return r;
}

/** The rollout's round read as the coordinator reads it (snapshot.ts), and the revision it is taking its pods to. */
async function snapshotOf(api: RolloutAccess['api'], deployments: RolloutAccess['deployments'], r: InPlaceRollout) {
  const { observe } = await import('../controllers/rollout/snapshot.js');
  const { targetRevision } = await import('../controllers/rollout/revisions.js');
  const { input } = await observe(api, r, [r], Date.now(), deployments);
  return { input, target: input.workload ? targetRevision(input.workload, input.revisions) : undefined };
}

/** Adds `rollout` with its subcommands to inplacectl. */
export function addRolloutCommand(prog: Command, globals: () => RolloutGlobals): void {
  const ro = prog.command('rollout').description('in-place rollouts of OnDelete StatefulSets and DaemonSets (InPlaceRollout objects; needs a kubeconfig)');

  ro.command('status')
    .description('phase, revisions, pods updated and in flight, failures')
    .argument('<name>')
    .option('-n, --namespace <ns>', 'the rollout\'s namespace (default: the kubeconfig context\'s, then default)')
    .option('-w, --watch', 'follow until Succeeded (exit 0) or stopped by a failure (exit 1)')
    .option('--interval <duration>', 'refresh interval with --watch', '1s')
    .action((name: string, o: { namespace?: string; watch?: boolean; interval: string }) => rolloutStatus(globals(), name, o));

  for (const [verb, paused] of [['pause', true], ['resume', false]] as const) {
    ro.command(verb)
      .description(paused ? 'start no further pod update (those under way finish)' : 'go on starting pod updates')
      .argument('<name>')
      .option('-n, --namespace <ns>', 'the rollout\'s namespace (default: the kubeconfig context\'s, then default)')
      .action(async (name: string, o: { namespace?: string }) => {
        const g = globals();
        const { api, ns } = await access(g, o.namespace);
        const r = await api.patchRolloutSpec(ns, name, { paused });
        process.stdout.write(g.output === 'text' ? `inplacerollout ${ns}/${name} ${paused ? 'paused' : 'resumed'}\n` : structured(g.output, r) + '\n');
      });
  }

  ro.command('history')
    .description("the target's revisions, their images, and the pods that run each now (kubectl rollout history shows no pods)")
    .argument('<name>')
    .option('-n, --namespace <ns>', 'the rollout\'s namespace (default: the kubeconfig context\'s, then default)')
    .action(async (name: string, o: { namespace?: string }) => {
      const g = globals();
      const { api, deployments, ns } = await access(g, o.namespace);
      const r = await rolloutNamed(api, ns, name);
      const { input, target: t } = await snapshotOf(api, deployments, r);
      if (!input.workload) throw new RolloutUsageError(`${r.spec.targetRef.kind} ${r.spec.targetRef.name} not found in namespace ${ns}`);
      const target = t?.hash;
      process.stdout.write(g.output === 'text' ? renderHistory(input.revisions, input.pods, target) + '\n' : structured(g.output, { target, revisions: input.revisions, pods: input.pods.map((p) => ({ name: p.name, revision: p.revisionHash })) }) + '\n');
    });

  ro.command('undo')
    .description('a held Deployment back to the template its pods run (kubectl rollout undo refuses it paused); elsewhere, use kubectl rollout undo')
    .argument('<name>')
    .option('-n, --namespace <ns>', 'the rollout\'s namespace (default: the kubeconfig context\'s, then default)')
    .action((name: string, o: { namespace?: string }) => undoRollout(globals(), name, o));
}

/** `rollout status`: prints the status once, or with watch each time it changes until it ends (the exit code says how). */
async function rolloutStatus(g: RolloutGlobals, name: string, o: { namespace?: string; watch?: boolean; interval: string }): Promise<void> {
  let every: number;
  try {
    every = durationFlagMs('--interval', o.interval, { minMs: MIN_WATCH_INTERVAL_MS });
  } catch (err) {
    throw new RolloutUsageError((err as Error).message);
  }
  const { api, ns } = await access(g, o.namespace);
  let last = '';
  for (;;) {
    const r = await api.getRollout(ns, name);
    if (!r) throw new RolloutUsageError(`no InPlaceRollout ${ns}/${name}`);
    const out = g.output === 'text' ? renderRolloutStatus(r) : structured(g.output, r);
    if (out !== last) process.stdout.write(out + '\n');
    last = out;
    const end = watchEnd(r);
    if (!o.watch || end !== undefined) {
      if (o.watch) process.exitCode = end;
      return;
    }
    await new Promise((res) => setTimeout(res, every));
  }
}

/** `rollout undo`: a held Deployment's template set back to the one its pods run, or a usage error saying why not. */
async function undoRollout(g: RolloutGlobals, name: string, o: { namespace?: string }): Promise<void> {
  const { api, deployments, ns } = await access(g, o.namespace);
  const r = await rolloutNamed(api, ns, name);
  const ref = r.spec.targetRef;
  const d = ref.kind === 'Deployment' ? await deployments.getDeployment(ns, ref.name) : undefined;
  const rss = d ? await deployments.listReplicaSets(ns, d.spec?.selector?.matchLabels ?? {}) : [];
  let onNew = 0;
  if (d) {
    const { input, target } = await snapshotOf(api, deployments, r);
    const busy = new Set(input.restarts.filter((x) => x.revisionHash === target?.hash && (x.phase === 'Pending' || x.phase === 'Running')).map((x) => x.pod));
    onNew = input.pods.filter((p) => target && (p.revisionHash === target.hash || busy.has(p.name))).length;
  }
  const t = undoTarget(ref.kind, ref.name, d, rss, onNew);
  if ('refuse' in t) throw new RolloutUsageError(t.refuse);
  const out = await deployments.restoreTemplate(ns, ref.name, t.template);
  process.stdout.write(g.output === 'text' ? `deployment ${ns}/${ref.name} set back to the template its pods run; the rollout releases it\n` : structured(g.output, out) + '\n');
}
