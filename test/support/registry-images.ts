// Builds small Docker schema2 images in memory (gzip'd tar layers of files with given bytes) and pushes them
// to a registry over the distribution HTTP API, so tests and the pull benchmark make their own images without
// Docker Hub or an image build tool.
import { createHash } from 'node:crypto';
import { gzipSync } from 'node:zlib';

/** One file in a layer. */
export interface LayerFile {
  path: string;
  data: Buffer;
  mode?: number;
}

/** A built layer blob. */
export interface BuiltLayer {
  /** Digest of the compressed blob. */
  digest: string;
  /** Digest of the uncompressed tar (the config's diff_id). */
  diffId: string;
  blob: Buffer;
}

/** A built image: its blobs and its manifest. */
export interface BuiltImage {
  layers: BuiltLayer[];
  config: Buffer;
  configDigest: string;
  manifest: Buffer;
  /** Digest of the manifest: what `name@digest` resolves to. */
  manifestDigest: string;
}

const MANIFEST_TYPE = 'application/vnd.docker.distribution.manifest.v2+json';
const CONFIG_TYPE = 'application/vnd.docker.container.image.v1+json';
const LAYER_TYPE = 'application/vnd.docker.image.rootfs.diff.tar.gzip';

const sha256 = (b: Buffer) => 'sha256:' + createHash('sha256').update(b).digest('hex');

function octal(n: number, width: number): string {
  return n.toString(8).padStart(width - 1, '0') + '\0';
}

/** A ustar archive of regular files (directories implied). */
export function tarOf(files: LayerFile[]): Buffer {
  const parts: Buffer[] = [];
  for (const f of files) {
    const h = Buffer.alloc(512);
    h.write(f.path.replace(/^\/+/, ''), 0, 100, 'utf8');
    h.write(octal(f.mode ?? 0o644, 8), 100, 'ascii');
    h.write(octal(0, 8), 108, 'ascii');
    h.write(octal(0, 8), 116, 'ascii');
    h.write(octal(f.data.length, 12), 124, 'ascii');
    h.write(octal(1_700_000_000, 12), 136, 'ascii');
    h.write('        ', 148, 'ascii');
    h.write('0', 156, 'ascii');
    h.write('ustar\0', 257, 'ascii');
    h.write('00', 263, 'ascii');
    let sum = 0;
    for (const b of h) sum += b;
    h.write(sum.toString(8).padStart(6, '0') + '\0 ', 148, 'ascii');
    parts.push(h, f.data);
    const pad = (512 - (f.data.length % 512)) % 512;
    if (pad) parts.push(Buffer.alloc(pad));
  }
  parts.push(Buffer.alloc(1024));
  return Buffer.concat(parts);
}

/** A layer holding the given files; `level` 1 keeps gzip of incompressible data fast. */
export function buildLayer(files: LayerFile[], level = 1): BuiltLayer {
  const tar = tarOf(files);
  const blob = gzipSync(tar, { level });
  return { digest: sha256(blob), diffId: sha256(tar), blob };
}

/** An image of the given layers (bottom first); `label` makes otherwise equal images distinct. */
export function buildImage(layers: BuiltLayer[], label = ''): BuiltImage {
  const config = Buffer.from(
    JSON.stringify({
      architecture: 'amd64',
      os: 'linux',
      created: '2024-01-01T00:00:00Z',
      config: { Entrypoint: ['/bin/sh'], Labels: label ? { 'inplace.test': label } : {} },
      rootfs: { type: 'layers', diff_ids: layers.map((l) => l.diffId) },
      history: layers.map(() => ({ created: '2024-01-01T00:00:00Z', created_by: 'inplace test' })),
    }),
  );
  const configDigest = sha256(config);
  const manifest = Buffer.from(
    JSON.stringify({
      schemaVersion: 2,
      mediaType: MANIFEST_TYPE,
      config: { mediaType: CONFIG_TYPE, size: config.length, digest: configDigest },
      layers: layers.map((l) => ({ mediaType: LAYER_TYPE, size: l.blob.length, digest: l.digest })),
    }),
  );
  return { layers, config, configDigest, manifest, manifestDigest: sha256(manifest) };
}

/** Incompressible bytes, different for each seed, the same for the same seed (so layers can be shared). */
export function seededBytes(seed: string, size: number): Buffer {
  const out = Buffer.alloc(size);
  const h = createHash('sha256').update(seed).digest();
  // A cheap xorshift stream seeded from the hash: fast for tens of MiB, and gzip cannot shrink it.
  let x = h.readUInt32LE(0) | 1;
  let y = h.readUInt32LE(4) | 1;
  for (let off = 0; off + 4 <= size; off += 4) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    y = (Math.imul(y, 1664525) + 1013904223) >>> 0;
    out.writeUInt32LE((x ^ y) >>> 0, off);
  }
  return out;
}

/** Where and how to push. */
export interface PushTarget {
  /** host:port of a plain-HTTP registry. */
  registry: string;
  /** `user:password` for basic auth, when the registry requires it. */
  basicAuth?: string;
}

async function call(target: PushTarget, method: string, url: string, body?: Buffer, contentType?: string): Promise<Response> {
  const headers: Record<string, string> = {};
  if (target.basicAuth) headers.authorization = 'Basic ' + Buffer.from(target.basicAuth).toString('base64');
  if (contentType) headers['content-type'] = contentType;
  const full = url.startsWith('http') ? url : `http://${target.registry}${url}`;
  return fetch(full, { method, headers, body: body ? new Uint8Array(body) : undefined, redirect: 'manual' });
}

/** Uploads a blob to repo unless the registry has it. */
export async function pushBlob(target: PushTarget, repo: string, digest: string, blob: Buffer): Promise<void> {
  const head = await call(target, 'HEAD', `/v2/${repo}/blobs/${digest}`);
  if (head.status === 200) return;
  const start = await call(target, 'POST', `/v2/${repo}/blobs/uploads/`);
  if (start.status !== 202) throw new Error(`push ${repo}: upload start answered ${start.status} ${await start.text()}`);
  const loc = start.headers.get('location') ?? '';
  const url = new URL(loc, `http://${target.registry}`);
  url.searchParams.set('digest', digest);
  const put = await call(target, 'PUT', url.toString(), blob, 'application/octet-stream');
  if (put.status !== 201) throw new Error(`push ${repo}: blob ${digest} answered ${put.status} ${await put.text()}`);
}

/** Pushes an image as `repo:tag` (repo without the registry host); returns `registry/repo:tag`. */
export async function pushImage(target: PushTarget, repo: string, tag: string, image: BuiltImage): Promise<string> {
  for (const l of image.layers) await pushBlob(target, repo, l.digest, l.blob);
  await pushBlob(target, repo, image.configDigest, image.config);
  const res = await call(target, 'PUT', `/v2/${repo}/manifests/${tag}`, image.manifest, MANIFEST_TYPE);
  if (res.status !== 201) throw new Error(`push ${repo}:${tag}: manifest answered ${res.status} ${await res.text()}`);
  return `${target.registry}/${repo}:${tag}`;
}
