// Every node of the test cluster (scripts/kube-sandbox up --nodes N): each is Ready at its own address and runs
// its pods on its own containerd (reached at the per-node socket path the agent DaemonSet uses), and pods on
// different nodes reach each other directly and through Services, a pod included through its own Service
// (hairpin). With one node the same checks run on that node alone.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { CoreV1Api, KubeConfig, V1Pod } from '@kubernetes/client-node';
import { CriRuntime } from '../../src/runtime/cri/cri-runtime.js';
import { kubeEnv } from '../testbed/kube-env.js';
import { createNamespace, deleteNamespace } from '../support/kube-cluster.js';
import { kubeTest, until } from '../support/kube-test.js';

const env = kubeEnv();
const PORT = 8080;

describe(`test cluster nodes (${env.nodes.map((n) => n.name).join(', ')})`, function () {
  this.timeout(180_000);
  let kc: KubeConfig;
  let core: CoreV1Api;
  let ns: string | undefined;
  const runtimes = new Map<string, CriRuntime>();
  const pods = new Map<string, V1Pod>();
  const tag = randomBytes(3).toString('hex');
  const podName = (i: number) => `web-${i}-${tag}`;

  before(async function () {
    ({ kc, core } = await kubeTest(this));
    for (const n of env.nodes) runtimes.set(n.name, new CriRuntime(n.criEndpoint));
    ns = await createNamespace(kc, 'knodes');
  });

  after(async () => {
    if (ns) await deleteNamespace(kc, ns);
    for (const rt of runtimes.values()) rt.close();
  });

  it('each node is Ready at an address of its own, with a containerd of its own; containerd 1.6 and 2.x both among 3+ nodes', async () => {
    const addresses = new Set<string>();
    const versions: string[] = [];
    for (const n of env.nodes) {
      const node = await core.readNode({ name: n.name });
      assert.equal(node.status?.conditions?.find((c) => c.type === 'Ready')?.status, 'True', `${n.name} Ready`);
      const ip = node.status?.addresses?.find((a) => a.type === 'InternalIP')?.address ?? '';
      assert.ok(ip && !addresses.has(ip), `${n.name} has an address of its own (${ip})`);
      addresses.add(ip);
      const version = node.status?.nodeInfo?.containerRuntimeVersion ?? '';
      assert.match(version, /^containerd:\/\//);
      // the socket with the node's name in its path is the runtime that kubelet reports
      const v = await runtimes.get(n.name)!.version();
      // (the kubelet reports the version as semver: v2.2.9 as 2.2.9, 1.6.20~ds1 as 1.6.20)
      assert.equal(`${v.name}://${v.version.replace(/^v/, '').replace(/~.*$/, '')}`, version, `${n.criEndpoint} is the runtime ${n.name}'s kubelet reports`);
      versions.push(version);
    }
    if (env.nodes.length >= 3) {
      assert.ok(versions.some((v) => /^containerd:\/\/v?1\./.test(v)), `a node on containerd 1.x among ${versions.join(', ')}`);
      assert.ok(versions.some((v) => /^containerd:\/\/v?2\./.test(v)), `a node on containerd 2.x among ${versions.join(', ')}`);
    }
  });

  it("a pod on each node runs on that node's runtime; every pod reaches every other pod and every Service, its own included", async () => {
    for (const [i, n] of env.nodes.entries()) {
      await core.createNamespacedPod({
        namespace: ns!,
        body: {
          metadata: { name: podName(i), labels: { web: podName(i) } },
          spec: {
            nodeName: n.name,
            terminationGracePeriodSeconds: 1,
            containers: [{ name: 'web', image: env.sandbox.images.appV1, args: ['httpd', '-f', '-p', String(PORT), '-h', '/app'] }],
          },
        },
      });
      await core.createNamespacedService({
        namespace: ns!,
        body: { metadata: { name: podName(i) }, spec: { selector: { web: podName(i) }, ports: [{ port: 80, targetPort: PORT }] } },
      });
    }
    for (const [i, n] of env.nodes.entries()) {
      const p = await until(`${podName(i)} Ready on ${n.name}`, 90_000, async () => {
        const cur = await core.readNamespacedPod({ name: podName(i), namespace: ns! });
        return cur.status?.containerStatuses?.[0]?.ready ? cur : undefined;
      });
      const id = (p.status?.containerStatuses?.[0]?.containerID ?? '').replace(/^containerd:\/\//, '');
      const ctr = (await runtimes.get(n.name)!.listContainers()).find((c) => c.id === id);
      assert.equal(ctr?.state, 'running', `${podName(i)}'s container runs in ${n.name}'s containerd (${n.criEndpoint})`);
      pods.set(n.name, p);
    }
    const services = await Promise.all(env.nodes.map((_, i) => core.readNamespacedService({ name: podName(i), namespace: ns! })));
    const get = async (from: string, host: string, port: number): Promise<string> => {
      const p = pods.get(from)!;
      const id = (p.status?.containerStatuses?.[0]?.containerID ?? '').replace(/^containerd:\/\//, '');
      // busybox wget crashes in these containers; nc speaks the HTTP request itself
      const r = await runtimes.get(from)!.exec(id, ['sh', '-c', `printf 'GET /version HTTP/1.0\\r\\n\\r\\n' | nc -w 3 ${host} ${port}`], 10);
      return r.stdout;
    };
    for (const from of env.nodes) {
      for (const [j, to] of env.nodes.entries()) {
        const ip = pods.get(to.name)!.status?.podIP ?? '';
        assert.match(await get(from.name, ip, PORT), /200 OK[\s\S]*\bv1\b/, `${from.name} -> pod on ${to.name} (${ip})`);
        // kube-proxy applies a new Service within its sync period: read until the answer comes
        const vip = services[j]!.spec?.clusterIP ?? '';
        await until(`${from.name} -> Service ${podName(j)} (${vip})`, 30_000, async () => ((await get(from.name, vip, 80)).includes('200 OK') ? true : undefined));
      }
    }
  });
});
