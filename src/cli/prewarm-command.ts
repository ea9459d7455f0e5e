// `inplacectl prewarm create|status|delete NAME`: fleet pre-warm through the Kubernetes API (no agent socket).
// status sums up the per-node NodePrewarm objects itself, so it is current even when no summary was written.
import type { Command } from 'commander';
import { durationFlagMs, type DurationFlagRule } from '../duration.js';
import { collect } from './args.js';
import { loadTarget, type KubeTarget } from './kube-target.js';
import { structured, type OutputFormat } from './output.js';
import { parseImageRef } from '../image-ref.js';
import { FLEET_GROUP, FLEET_VERSION, type ImagePrewarmSpec, type ImagePrewarmStatus } from '../controllers/image-prewarm/types.js';
import type { KubeConfig } from '../k8s/client.js';

/** Bad usage (exit 2): thrown as this so main maps it. */
export class PrewarmUsageError extends Error {}

interface PrewarmGlobals extends KubeTarget {
  output: OutputFormat;
}

function pairs(values: string[], flag: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const v of values) {
    const eq = v.indexOf('=');
    if (eq <= 0) throw new PrewarmUsageError(`--${flag} takes KEY=VALUE, got "${v}"`);
    out[v.slice(0, eq)] = v.slice(eq + 1);
  }
  return out;
}

function int(v: string | undefined, flag: string, min: number, max: number): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < min || n > max) throw new PrewarmUsageError(`--${flag} must be an integer from ${min} to ${max}, got "${v}"`);
  return n;
}

/** A duration flag by the one rule (src/duration.ts); PrewarmUsageError naming the flag otherwise. */
function duration(v: string, flag: string, rule: DurationFlagRule): number {
  try {
    return durationFlagMs(`--${flag}`, v, rule);
  } catch (err) {
    throw new PrewarmUsageError((err as Error).message);
  }
}

/** A duration flag in whole seconds (rounded up), as the spec holds it. */
function seconds(v: string | undefined, flag: string, rule: DurationFlagRule): number | undefined {
  return v === undefined ? undefined : Math.ceil(duration(v, flag, rule) / 1000);
}

/** The least --interval of status --watch: a shorter one would poll the API server in a tight loop. */
export const MIN_WATCH_INTERVAL_MS = 100;

/** The spec from create's flags; every image reference is parsed before anything is sent. */
export function specFromFlags(o: Record<string, unknown>): ImagePrewarmSpec {
  const images = (o.image as string[] | undefined) ?? [];
  if (images.length === 0) throw new PrewarmUsageError('give at least one --image');
  for (const i of images) {
    try {
      parseImageRef(i);
    } catch (err) {
      throw new PrewarmUsageError((err as Error).message);
    }
  }
  const spec: ImagePrewarmSpec = { images };
  const nodeSel = (o.nodeSelector as string[] | undefined) ?? [];
  const podSel = o.podSelector as string | undefined;
  if (nodeSel.length > 0 && podSel) throw new PrewarmUsageError('--node-selector and --pod-selector are exclusive');
  if (nodeSel.length > 0) spec.nodeSelector = pairs(nodeSel, 'node-selector');
  if (podSel) {
    const slash = podSel.indexOf('/');
    if (slash <= 0) throw new PrewarmUsageError(`--pod-selector takes NAMESPACE/KEY=VALUE[,KEY=VALUE], got "${podSel}"`);
    spec.podSelector = { namespace: podSel.slice(0, slash), matchLabels: pairs(podSel.slice(slash + 1).split(','), 'pod-selector') };
  }
  spec.maxParallelNodes = int(o.maxParallel as string | undefined, 'max-parallel', 1, 1000);
  spec.seedNodes = int(o.seeds as string | undefined, 'seeds', 0, 1000);
  spec.backoffLimit = int(o.backoffLimit as string | undefined, 'backoff-limit', 0, 100);
  spec.activeDeadlineSeconds = seconds(o.deadline as string | undefined, 'deadline', { minMs: 1000 });
  // The CRD's rule: 0 (never) or at least 10 s.
  spec.refreshSeconds = seconds(o.refresh as string | undefined, 'refresh', { zeroMeans: 'never', minMs: 10_000 });
  if (o.pin) spec.pin = true;
  const secrets = (o.pullSecret as string[] | undefined) ?? [];
  if (secrets.length > 0) {
    spec.imagePullSecrets = secrets.map((s) => {
      const [namespace, name, extra] = s.split('/');
      if (!namespace || !name || extra !== undefined) throw new PrewarmUsageError(`--pull-secret takes NAMESPACE/NAME, got "${s}"`);
      return { namespace, name };
    });
  }
  for (const k of Object.keys(spec) as (keyof ImagePrewarmSpec)[]) if (spec[k] === undefined) delete spec[k];
  return spec;
}

async function kubeconfigOf(o: KubeTarget): Promise<KubeConfig> {
  try {
    return await loadTarget(o);
  } catch (err) {
    throw new PrewarmUsageError((err as Error).message);
  }
}

/** The calls to the API server, loaded only when a prewarm command runs (the Kubernetes client is large). */
const prewarmApi = () => import('./prewarm-api.js');

/** The status as text lines. */
export function renderPrewarmStatus(name: string, s: ImagePrewarmStatus, nodes: Record<string, string>): string {
  const lines = [`${name}: ${s.succeeded}/${s.desired} nodes done, ${s.pulling} pulling, ${s.waiting} waiting, ${s.failed} failed`];
  for (const [node, phase] of Object.entries(nodes)) lines.push(`  ${node.padEnd(30)} ${phase}`);
  for (const f of s.failedNodes) lines.push(`failed: ${f.node}: ${f.reason}${f.message ? `: ${f.message}` : ''}`);
  return lines.join('\n');
}

/** Adds `prewarm` with its subcommands to inplacectl. */
export function addPrewarmCommand(prog: Command, globals: () => PrewarmGlobals): void {
  const pw = prog.command('prewarm').description('warm images across the cluster before a rollout (ImagePrewarm objects; needs a kubeconfig)');
  // --kubeconfig is inplacectl's global flag (default: $KUBECONFIG, then in-cluster).
  const kubeOpt = (c: Command) => c;

  kubeOpt(pw.command('create'))
    .description('create an ImagePrewarm: every agent on the selected nodes pulls its part')
    .argument('<name>')
    .option('--image <ref>', 'image to warm (repeatable)', collect)
    .option('--node-selector <key=value>', 'nodes with this label (repeatable; all must match)', collect)
    .option('--pod-selector <ns/key=value,...>', 'the nodes where these pods run now')
    .option('--max-parallel <n>', 'nodes pulling at once across the cluster (default 1)')
    .option('--seeds <n>', 'nodes that pull first, alone, before the rest (default 0)')
    .option('--pin', 'protect the images from the kubelet\'s image GC while the prewarm exists (needs the verb pin on imageprewarms)')
    .option('--pull-secret <ns/name>', 'a dockerconfigjson Secret with registry credentials (repeatable)', collect)
    .option('--deadline <duration>', 'nodes not done by then are Failed')
    .option('--backoff-limit <n>', 'retries per image and node (default 3)')
    .option('--refresh <duration>', 're-check and re-pull what is gone every interval')
    .action(async (name: string, o: Record<string, unknown>) => {
      const spec = specFromFlags(o);
      const kc = await kubeconfigOf(globals());
      const body = { apiVersion: `${FLEET_GROUP}/${FLEET_VERSION}`, kind: 'ImagePrewarm', metadata: { name }, spec };
      await (await prewarmApi()).createPrewarm(kc, body);
      const g = globals();
      process.stdout.write(g.output === 'text' ? `imageprewarm ${name} created: ${spec.images.join(', ')}\n` : structured(g.output, body) + '\n');
    });

  kubeOpt(pw.command('status'))
    .description('nodes done, pulling, waiting and failed, summed up from the per-node records')
    .argument('<name>')
    .option('-w, --watch', 'follow until every node is done or failed (exit 1 when any failed)')
    .option('--interval <duration>', 'refresh interval with --watch', '2s')
    .action(async (name: string, o: { watch?: boolean; interval: string }) => {
      const every = duration(o.interval, 'interval', { minMs: MIN_WATCH_INTERVAL_MS });
      const g = globals();
      const kc = await kubeconfigOf(globals());
      const { liveStatus } = await prewarmApi();
      let last = '';
      for (;;) {
        const { status, nodes } = await liveStatus(kc, name);
        const text = renderPrewarmStatus(name, status, nodes);
        const out = g.output === 'text' ? text : structured(g.output, { name, ...status, nodes });
        if (out !== last) process.stdout.write(out + '\n');
        last = out;
        const done = status.desired > 0 && status.succeeded + status.failed === status.desired;
        if (!o.watch || done) {
          if (o.watch && status.failed > 0) process.exitCode = 1;
          return;
        }
        await new Promise((r) => setTimeout(r, every));
      }
    });

  kubeOpt(pw.command('delete'))
    .description('delete an ImagePrewarm (agents drop their records of it; images stay on the nodes)')
    .argument('<name>')
    .action(async (name: string) => {
      const kc = await kubeconfigOf(globals());
      await (await prewarmApi()).deletePrewarm(kc, name);
      const g = globals();
      process.stdout.write(g.output === 'text' ? `imageprewarm ${name} deleted\n` : structured(g.output, { name, deleted: true }) + '\n');
    });
}
