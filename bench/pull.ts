// `npm run bench:pull`: pulls N images (several layers each, some shared) from a loopback registry through
// the agent as installed (the built daemon, started here on the sandbox's runtime, asked over its API socket
// with `PullImages`, at its defaults: 2 pulls at once), and the same set with the runtime's own client
// (`docker pull`, `ctr -n k8s.io images pull`) twice: one image after another, and as 2 client processes at
// once (the agent's concurrency). All in the same run, removing the images in between. Prints wall times,
// their ratios, and how many blob downloads the registry served (shared layers should be fetched once).
//
// Usage: node dist/bench/pull.js [--images N] [--runtime docker|cri|all] [--rate MiB/s per connection]
//        [--rounds R]
// The sandbox (scripts/sandbox up) must be running, and the build (dist/). The order of the three ways
// rotates from one round to the next, so that none always goes first.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { CRI_NAMESPACE } from '../src/runtime/types.js';
import { launchAgent, type LaunchedAgent } from './agent-launch.js';
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
  /** The daemon's flags that put it on this runtime. */
  agentArgs: string[];
  /** The runtime's own client, e.g. `docker pull`. */
  clientName: string;
  clientPull(ref: string): Promise<void>;
}

const docker = (...args: string[]) => run('docker', ['-H', env.dockerHost, ...args], { maxBuffer: 16 * MiB });
const ctr = (...args: string[]) => run('ctr', ['-a', env.containerdAddress, '-n', CRI_NAMESPACE, ...args], { maxBuffer: 16 * MiB });

const sides: Record<string, Side> = {
  docker: {
    name: 'docker',
    agentArgs: ['--runtime', 'docker', '--docker-host', env.dockerHost],
    clientName: 'docker pull',
    clientPull: async (ref) => {
      await docker('pull', '-q', ref);
    },
    remove: async (refs) => {
      await docker('rmi', '-f', ...refs).catch(() => undefined);
    },
  },
  cri: {
    name: 'containerd (CRI)',
    agentArgs: ['--runtime', 'cri', '--cri-endpoint', env.criEndpoint, '--containerd-address', env.containerdAddress],
    clientName: 'ctr -n k8s.io images pull',
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

/** Wall times of one runtime's rounds, ms: the agent, the client one by one, the client 2 at once. */
interface Times {
  agent: number[];
  serial: number[];
  pair: number[];
}

/** Pulls refs with `workers` client processes at once, each taking the next image when its own is done. */
async function clientPulls(side: Side, refs: string[], workers: number): Promise<void> {
  const queue = [...refs];
  await Promise.all(
    Array.from({ length: workers }, async () => {
      for (let ref = queue.shift(); ref !== undefined; ref = queue.shift()) await side.clientPull(ref);
    }),
  );
}

async function benchRuntime(key: string, proxy: RegistryProxy, refs: string[], images: BuiltImage[], work: string): Promise<Times | undefined> {
  const side = sides[key];
  let agent: LaunchedAgent;
  try {
    agent = await launchAgent(work, `agent-${key}`, side.agentArgs);
  } catch (err) {
    console.log(`\n${side.name}: the agent did not start (${(err as Error).message.split('\n')[0]}); skipped`);
    return undefined;
  }
  console.log(`\n${side.name} (the agent as a process, pid ${agent.child.pid})`);
  const times: Times = { agent: [], serial: [], pair: [] };
  const line = (what: string, ms: number, blobs: number) => console.log(`  ${what.padEnd(52)} ${seconds(ms).padStart(9)}   blob downloads ${blobs}`);
  const runAgent = async () => {
    const before = proxy.totalBlobGets();
    const failed: string[] = [];
    const ms = await timeIt(async () => {
      for await (const e of agent.client.pullImages({ images: refs })) {
        if (e.phase === 'Failed') failed.push(`${e.image}: ${e.error}`);
      }
    });
    if (failed.length) throw new Error(`agent pull failed: ${failed.join('; ')}`);
    times.agent.push(ms);
    line('agent over its API (defaults: 2 at once)', ms, proxy.totalBlobGets() - before);
  };
  const runClient = (workers: number, into: number[]) => async () => {
    const before = proxy.totalBlobGets();
    const ms = await timeIt(() => clientPulls(side, refs, workers));
    into.push(ms);
    line(`${side.clientName} (${workers === 1 ? 'one by one' : `${workers} processes at once`})`, ms, proxy.totalBlobGets() - before);
  };
  const ways = [runClient(1, times.serial), runAgent, runClient(2, times.pair)];
  try {
    await side.remove(refs, images);
    for (let r = 0; r < rounds; r++) {
      for (let k = 0; k < ways.length; k++) {
        await ways[(r + k) % ways.length]();
        await side.remove(refs, images);
      }
    }
  } finally {
    await agent.stop();
  }
  return times;
}

async function main(): Promise<void> {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-pull-'));
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
        `; ${rounds} round(s), order rotating`,
    );
    console.log(`distinct blobs per pull of the set: ${uniqueLayers} layers + ${images.length} configs = ${uniqueLayers + images.length}`);
    const keys = which === 'all' ? ['docker', 'cri'] : [which];
    for (const k of keys) {
      if (!sides[k]) throw new Error(`unknown runtime "${k}" (docker, cri or all)`);
      const res = await benchRuntime(k, proxy, refs, images, work);
      if (!res) continue;
      const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
      const a = mean(res.agent);
      const one = mean(res.serial);
      const two = mean(res.pair);
      console.log(`  mean: agent ${seconds(a)}, one by one ${seconds(one)}, 2 at once ${seconds(two)}; one-by-one / agent = ${(one / a).toFixed(2)}x, 2-at-once / agent = ${(two / a).toFixed(2)}x`);
    }
  } finally {
    await proxy.close();
    await registry.stop();
    fs.rmSync(work, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(`bench:pull failed: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
