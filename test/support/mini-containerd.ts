// A small private containerd (CRI image service only: no CNI, no dockerd) for tests that need several nodes'
// worth of real runtimes at once, e.g. the fleet pre-warm's agents. Each has its own root, state and socket,
// and pulls from the given registries through per-registry mirror endpoints (plain HTTP on loopback).
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';

/** A running mini containerd. */
export interface MiniContainerd {
  dir: string;
  socket: string;
  /** `unix://` endpoint for --cri-endpoint. */
  endpoint: string;
  /** SIGTERM, wait, and remove its directory (unmounting what it left). */
  stop(): Promise<void>;
}

async function answers(socket: string): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect(socket, () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

/**
 * Starts containerd in dir (keep it short: socket paths). mirrors maps a registry host as written in image
 * references to the `host:port` actually contacted (a counting proxy, say); hosts map to themselves by default.
 */
export async function startMiniContainerd(dir: string, mirrors: Record<string, string>): Promise<MiniContainerd> {
  fs.mkdirSync(dir, { recursive: true });
  const socket = path.join(dir, 'c.sock');
  const mirrorLines = Object.entries(mirrors).flatMap(([host, to]) => [`  [plugins."io.containerd.grpc.v1.cri".registry.mirrors."${host}"]`, `    endpoint = ["http://${to}"]`]);
  const config = [
    'version = 2',
    `root = "${dir}/root"`,
    `state = "${dir}/state"`,
    'disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.internal.v1.opt", "io.containerd.tracing.processor.v1.otlp"]',
    '[grpc]',
    `  address = "${socket}"`,
    '[ttrpc]',
    '  address = ""',
    '[metrics]',
    '  address = ""',
    '[plugins."io.containerd.grpc.v1.cri"]',
    '  restrict_oom_score_adj = true',
    `  netns_mounts_under_state_dir = true`,
    '  stream_server_address = "127.0.0.1"',
    '  stream_server_port = "0"',
    '  [plugins."io.containerd.grpc.v1.cri".containerd]',
    '    snapshotter = "overlayfs"',
    '  [plugins."io.containerd.grpc.v1.cri".cni]',
    `    conf_dir = "${dir}/cni"`,
    ...mirrorLines,
    '',
  ].join('\n');
  fs.writeFileSync(path.join(dir, 'config.toml'), config);
  const log = fs.openSync(path.join(dir, 'containerd.log'), 'a');
  const child: ChildProcess = spawn('containerd', ['--config', path.join(dir, 'config.toml')], { stdio: ['ignore', log, log], detached: false });
  fs.closeSync(log);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const deadline = Date.now() + 20_000;
  while (!(await answers(socket))) {
    if (child.exitCode !== null) throw new Error(`containerd in ${dir} exited at start; see ${dir}/containerd.log`);
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`containerd in ${dir} did not answer in 20s`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    dir,
    socket,
    endpoint: `unix://${socket}`,
    stop: async () => {
      if (child.exitCode === null) child.kill('SIGTERM');
      const force = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(force);
      // overlay snapshots may still be mounted below root: unmount before removing
      const mounts = fs.readFileSync('/proc/mounts', 'utf8').split('\n').map((l) => l.split(' ')[1] ?? '').filter((m) => m.startsWith(dir + '/')).sort().reverse();
      for (const m of mounts) spawn('umount', ['-l', m]);
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
