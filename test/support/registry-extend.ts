// A new version of an image already in a loopback registry: its manifest and config again, with one more layer on
// top, pushed under a new tag. The old layers are shared (a node holding the old image downloads only the new
// layer), as with a real application release.
import { createHash } from 'node:crypto';
import { pushBlob, type BuiltLayer } from './registry-images.js';

const MANIFEST_TYPES = ['application/vnd.oci.image.manifest.v1+json', 'application/vnd.docker.distribution.manifest.v2+json'];
const sha256 = (b: Buffer) => 'sha256:' + createHash('sha256').update(b).digest('hex');

interface Manifest {
  mediaType?: string;
  config: { mediaType: string; size: number; digest: string };
  layers: { mediaType: string; size: number; digest: string }[];
}

/** Pushes `ref` plus `layer` (gzip'd) as tag `tag` of the same repository; returns the new reference. */
export async function extendImage(registry: string, ref: string, tag: string, layer: BuiltLayer): Promise<string> {
  const m = ref.slice(registry.length + 1).match(/^(.+):([^:/]+)$/);
  if (!ref.startsWith(`${registry}/`) || !m) throw new Error(`not a tagged reference in ${registry}: ${ref}`);
  const [, repo, from] = m;
  const got = await fetch(`http://${registry}/v2/${repo}/manifests/${from}`, { headers: { accept: MANIFEST_TYPES.join(', ') } });
  if (!got.ok) throw new Error(`GET manifest ${ref}: ${got.status}`);
  const type = got.headers.get('content-type') ?? MANIFEST_TYPES[0];
  if (!MANIFEST_TYPES.includes(type)) throw new Error(`${ref}: a ${type}, not a single-platform manifest`);
  const manifest = (await got.json()) as Manifest;
  const cfgRes = await fetch(`http://${registry}/v2/${repo}/blobs/${manifest.config.digest}`);
  if (!cfgRes.ok) throw new Error(`GET config of ${ref}: ${cfgRes.status}`);
  const config = (await cfgRes.json()) as { rootfs: { diff_ids: string[] }; history?: unknown[] };
  config.rootfs.diff_ids.push(layer.diffId);
  config.history?.push({ created: new Date().toISOString(), created_by: 'extendImage' });
  const cfg = Buffer.from(JSON.stringify(config));
  const target = { registry };
  await pushBlob(target, repo, layer.digest, layer.blob);
  await pushBlob(target, repo, sha256(cfg), cfg);
  const oci = type === MANIFEST_TYPES[0];
  const next: Manifest = {
    ...manifest,
    config: { ...manifest.config, size: cfg.length, digest: sha256(cfg) },
    layers: [...manifest.layers, { mediaType: oci ? 'application/vnd.oci.image.layer.v1.tar+gzip' : 'application/vnd.docker.image.rootfs.diff.tar.gzip', size: layer.blob.length, digest: layer.digest }],
  };
  const put = await fetch(`http://${registry}/v2/${repo}/manifests/${tag}`, { method: 'PUT', headers: { 'content-type': type }, body: JSON.stringify(next) });
  if (!put.ok) throw new Error(`PUT manifest ${repo}:${tag}: ${put.status} ${await put.text()}`);
  return `${registry}/${repo}:${tag}`;
}
