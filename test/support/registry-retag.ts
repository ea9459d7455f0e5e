// A second tag for an image already in a loopback registry, for tests that need an image change without building one.

/**
 * Gives an image in the loopback registry a second tag (its manifest put again under that tag), so the node has
 * it under no such reference and a restart to it is a real pull, with the kubelet-style Pulling event.
 */
export async function retag(registry: string, ref: string, tag: string): Promise<string> {
  const m = ref.slice(registry.length + 1).match(/^(.+):([^:/]+)$/);
  if (!m) throw new Error(`not a tagged reference in ${registry}: ${ref}`);
  const [, repo, from] = m;
  const accept = ['application/vnd.oci.image.manifest.v1+json', 'application/vnd.docker.distribution.manifest.v2+json', 'application/vnd.oci.image.index.v1+json'].join(', ');
  const got = await fetch(`http://${registry}/v2/${repo}/manifests/${from}`, { headers: { accept } });
  if (!got.ok) throw new Error(`GET manifest ${ref}: ${got.status}`);
  const type = got.headers.get('content-type') ?? 'application/vnd.oci.image.manifest.v1+json';
  const put = await fetch(`http://${registry}/v2/${repo}/manifests/${tag}`, { method: 'PUT', headers: { 'content-type': type }, body: Buffer.from(await got.arrayBuffer()) });
  if (!put.ok) throw new Error(`PUT manifest ${repo}:${tag}: ${put.status} ${await put.text()}`);
  return `${registry}/${repo}:${tag}`;
}
