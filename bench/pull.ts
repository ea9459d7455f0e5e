// `npm run bench:pull`: pulls N images (several layers each, some shared) from a loopback registry with the
// agent's pull service at its defaults, and the same set one by one with the runtime's own client
// (`docker pull`, `ctr -n k8s.io images pull`), in the same run, removing the images in between. Prints wall
// times, their ratio, and how many blob downloads the registry served (shared layers should be fetched once).
//
// Usage: node dist/bench/pull.js [--images N] [--runtime docker|cri|all] [--rate MiB/s per connection]
//        [--rounds R]
// The sandbox (scripts/sandbox up) must be running. A round runs the client first then the agent; the next
// round swaps them, so neither always goes first.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { Registry } from 'prom-client';
import { ImagePullService } from '../src/pull/pull-service.js';
import { ContainerdProgressSource } from '../src/runtime/containerd/pull-progress.js';
import type { Runtime } from '../src/runtime/runtime.js';
import { CriRuntime } from '../src/runtime/cri/cri-runtime.js';
import { DockerRuntime } from '../src/runtime/docker/docker-runtime.js';
import { CRI_NAMESPACE } from '../src/runtime/types.js';
import { sandboxEnv } from '../test/testbed/sandbox-env.js';
import { buildImage, buildLayer, pushImage, seededBytes, type BuiltImage, type BuiltLayer } from '../test/support/registry-images.js';
import { startRegistryProxy, type RegistryProxy } from '../test/support/registry-proxy.js';
import { startRegistry } from '../test/support/registry-server.js';

const run = promisify(execFile);
const MiB = 1024 * 1024;
const env = sandboxEnv();

function arg(name: string, def: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1] : def;
}

const N = Math.max(8, Number(arg('images', '8')));
const which = arg('runtime', 'all');
const rateMiB = Number(arg('rate', '0'));
const rounds = Math.max(1, Number(arg('rounds', '2')));

/** The image set: a base layer shared by all, one of two middle layers, and an app layer of its own. */
function imageSet(seed: string): { images: BuiltImage[]; uniqueLayers: number; uniqueBytes: number } {
  const base = buildLayer([{ path: 'base/blob', data: seededBytes(`${seed}-base`, 8 * MiB) }]);
  const mids = [0, 1].map((i) => buildLayer([{ path: `mid/blob${i}`, data: seededBytes(`${seed}-mid${i}`, 4 * MiB) }]));
  const images: BuiltImage[] = [];
  const layers = new Map<string, BuiltLayer>();
  for (let i = 0; i < N; i++) {
    const app = buildLayer([{ path: `app/blob${i}`, data: seededBytes(`${seed}-app${i}`, 4 * MiB) }]);
    const ls = [base, mids[i % 2], app];
    for (const l of ls) layers.set(l.digest, l);
    images.push(buildImage(ls, `${seed}-${i}`));
  }
  return { images, uniqueLayers: layers.size, uniqueBytes: [...layers.values()].reduce((a, l) => a + l.blob.length, 0) };
}

interface Side {
  name: string;
  remove(refs: string[], images: BuiltImage[]): Promise<void>;
  make(): Runtime;
  clientName: string;
  clientPull(ref: string): Promise<void>;
}

const docker = (...args: string[]) => run('docker', ['-H', env.dockerHost, ...args], { maxBuffer: 16 * MiB });
const ctr = (...args: string[]) => run('ctr', ['-a', env.containerdAddress, '-n', CRI_NAMESPACE, ...args], { maxBuffer: 16 * MiB });

const sides: Record<string, Side> = {
  docker: {
    name: 'docker',
    make: () => new DockerRuntime(env.dockerHost),
    clientName: 'docker pull (one by one)',
    clientPull: async (ref) => {
      await docker('pull', '-q', ref);
    },
    remove: async (refs) => {
      await docker('rmi', '-f', ...refs).catch(() => undefined);
    },
  },
  cri: {
    name: 'containerd (CRI)',
    make: () => new CriRuntime(env.criEndpoint),
    clientName: 'ctr -n k8s.io images pull (one by one)',
    clientPull: async (ref) => {
      await ctr('images', 'pull', '--plain-http', ref);
    },
    remove: async (refs, images) => {
      const listed = (await ctr('images', 'ls', '-q')).stdout.split('\n').filter(Boolean);
      const ids = new Set(images.map((i) => i.configDigest));
      const hosts = new Set(refs.map((r) => r.split('/')[0]));
      const mine = listed.filter((n) => ids.has(n) || hosts.has(n.split('/')[0]));
      // --sync runs containerd's garbage collection at once, so layers and snapshots are gone before the next run.
      if (mine.length) await ctr('images', 'rm', '--sync', ...mine).catch(() => undefined);
      const left = (await ctr('content', 'ls', '-q')).stdout;
      const stale = images.flatMap((i) => i.layers.map((l) => l.digest)).filter((d) => left.includes(d));
      if (stale.length) await ctr('content', 'rm', ...new Set(stale)).catch(() => undefined);
    },
  },
};

const seconds = (ms: number) => (ms / 1000).toFixed(2) + ' s';

async function timeIt(fn: () => Promise<void>): Promise<number> {
  const t0 = performance.now();
  await fn();
  return performance.now() - t0;
}

async function benchRuntime(key: string, proxy: RegistryProxy, refs: string[], images: BuiltImage[]): Promise<{ agent: number[]; client: number[] } | undefined> {
  const side = sides[key];
  const rt = side.make();
  try {
    await rt.version();
  } catch (err) {
    console.log(`\n${side.name}: not reachable (${(err as Error).message}); skipped`);
    rt.close();
    return undefined;
  }
  const progress = key === 'cri' ? new ContainerdProgressSource({ address: env.containerdAddress }) : undefined;
  console.log(`\n${side.name}`);
  const agentTimes: number[] = [];
  const clientTimes: number[] = [];
  const runAgent = async () => {
    const svc = new ImagePullService({ runtime: rt, progressSource: progress, metricsRegistry: new Registry() });
    const before = proxy.totalBlobGets();
    let failed = '';
    const ms = await timeIt(async () => {
      const res = await svc.pull({ images: refs }, () => undefined);
      failed = res.filter((e) => e.phase !== 'Done').map((e) => `${e.image}: ${e.error}`).join('; ');
    });
    if (failed) throw new Error(`agent pull failed: ${failed}`);
    agentTimes.push(ms);
    console.log(`  agent pull service (defaults: 2 at once)   ${seconds(ms).padStart(9)}   blob downloads ${proxy.totalBlobGets() - before}`);
  };
  const runClient = async () => {
    const before = proxy.totalBlobGets();
    const ms = await timeIt(async () => {
      for (const r of refs) await side.clientPull(r);
    });
    clientTimes.push(ms);
    console.log(`  ${side.clientName.padEnd(41)} ${seconds(ms).padStart(9)}   blob downloads ${proxy.totalBlobGets() - before}`);
  };
  try {
    await side.remove(refs, images);
    for (let r = 0; r < rounds; r++) {
      const order = r % 2 === 0 ? [runClient, runAgent] : [runAgent, runClient];
      for (const step of order) {
        await step();
        await side.remove(refs, images);
      }
    }
  } finally {
    progress?.close();
    rt.close();
  }
  return { agent: agentTimes, client: clientTimes };
}

async function main(): Promise<void> {
  const registry = await startRegistry();
  const proxy = await startRegistryProxy(registry.host);
  if (rateMiB > 0) proxy.setRate(rateMiB * MiB);
  try {
    const seed = randomBytes(4).toString('hex');
    const { images, uniqueLayers, uniqueBytes } = imageSet(seed);
    const refs: string[] = [];
    for (let i = 0; i < images.length; i++) {
      await pushImage({ registry: registry.host }, `bench/app${i}`, 'v1', images[i]);
      refs.push(`${proxy.host}/bench/app${i}:v1`);
    }
    const perImage = images[0].layers.reduce((a, l) => a + l.blob.length, 0);
    console.log(
      `pull benchmark: ${images.length} images x ${images[0].layers.length} layers (${(perImage / MiB).toFixed(0)} MiB each; ` +
        `${uniqueLayers} distinct layers, ${(uniqueBytes / MiB).toFixed(0)} MiB distinct), registry ${registry.host} via counting proxy ${proxy.host}` +
        (rateMiB > 0 ? `, ${rateMiB} MiB/s per connection` : ', loopback unthrottled') +
        `; ${rounds} round(s), order alternating`,
    );
    console.log(`distinct blobs per pull of the set: ${uniqueLayers} layers + ${images.length} configs = ${uniqueLayers + images.length}`);
    const keys = which === 'all' ? ['docker', 'cri'] : [which];
    for (const k of keys) {
      if (!sides[k]) throw new Error(`unknown runtime "${k}" (docker, cri or all)`);
      const res = await benchRuntime(k, proxy, refs, images);
      if (!res) continue;
      const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
      const a = mean(res.agent);
      const c = mean(res.client);
      console.log(`  mean: agent ${seconds(a)}, one by one ${seconds(c)}; one-by-one / agent = ${(c / a).toFixed(2)}x`);
    }
  } finally {
    await proxy.close();
    await registry.stop();
  }
}

main().catch((err: unknown) => {
  console.error(`bench:pull failed: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
