import assert from 'node:assert/strict';
import type { Container__Output } from '../../src/gen/runtime/v1/Container.js';
import { criPackageDefinition } from '../../src/runtime/cri/proto.js';
import { containerConfigFromJson, parseJsonLossless, sandboxConfigFromJson } from '../../src/runtime/cri/config-json.js';
import { attemptLogPath, nanosToDate, toContainerConfig, toContainerSpec, type CriNative } from '../../src/runtime/cri/convert.js';
import { diffSnapshots, snapshotOf } from '../../src/runtime/cri/events.js';
import { readContainerInfo } from '../../src/runtime/cri/verbose-info.js';

// The `config` of containerd 1.6.20's verbose ContainerStatus info, as it really comes (encoding/json of the
// CRI struct: snake_case, zero values left out, enums as numbers), with fields added to cover the types.
const CONTAINERD_CONFIG_JSON = `{
  "metadata": {"name": "app", "attempt": 2},
  "image": {"image": "127.0.0.1:5000/inplace/app:v1", "annotations": {"k": "v"}},
  "command": ["/bin/sh", "-c", "echo \\"hi\\""],
  "args": ["x"],
  "working_dir": "/app",
  "envs": [{"key": "A", "value": "1"}],
  "mounts": [{"container_path": "/data", "host_path": "/tmp/vol", "readonly": true, "propagation": 1,
              "uidMappings": [{"host_id": 1000, "container_id": 0, "length": 1}]}],
  "devices": [{"container_path": "/dev/fuse", "host_path": "/dev/fuse", "permissions": "rwm"}],
  "labels": {"io.kubernetes.container.name": "app"},
  "annotations": {"io.kubernetes.container.restartCount": "2"},
  "log_path": "app/2.log",
  "stdin": true,
  "tty": true,
  "linux": {
    "resources": {"cpu_period": 100000, "cpu_quota": 50000, "memory_limit_in_bytes": 9223372036854775807,
                  "oom_score_adj": -997, "hugepage_limits": [{"page_size": "2MB", "limit": 0}], "unified": {"memory.high": "1"}},
    "security_context": {
      "capabilities": {"add_capabilities": ["NET_ADMIN"], "drop_capabilities": ["ALL"]},
      "namespace_options": {"pid": 1, "network": 2},
      "run_as_user": {"value": 1000},
      "readonly_rootfs": true,
      "no_new_privs": true,
      "masked_paths": ["/proc/kcore"],
      "seccomp": {"profile_type": 2, "localhost_ref": "/p.json"}
    }
  },
  "CDI_devices": [{"name": "vendor.com/gpu=0"}],
  "stop_signal": 23
}`;

describe('CRI verbose config JSON to proto objects', () => {
  const config = containerConfigFromJson(parseJsonLossless(CONTAINERD_CONFIG_JSON));

  it('maps snake_case names to the loader\'s camelCase ones', () => {
    assert.deepEqual(config.metadata, { name: 'app', attempt: 2 });
    assert.equal(config.workingDir, '/app');
    assert.equal(config.logPath, 'app/2.log');
    assert.deepEqual(config.mounts?.[0], {
      containerPath: '/data',
      hostPath: '/tmp/vol',
      readonly: true,
      propagation: 'PROPAGATION_HOST_TO_CONTAINER',
      uidMappings: [{ hostId: 1000, containerId: 0, length: 1 }],
    });
    assert.deepEqual(config.devices, [{ containerPath: '/dev/fuse', hostPath: '/dev/fuse', permissions: 'rwm' }]);
    assert.deepEqual(config.CDIDevices, [{ name: 'vendor.com/gpu=0' }]);
    assert.equal(config.stdin, true);
    assert.equal(config.tty, true);
  });

  it('turns numeric enums into names, nested enums included', () => {
    assert.equal(config.stopSignal, 'SIGTERM');
    assert.deepEqual(config.linux?.securityContext?.namespaceOptions, { pid: 'CONTAINER', network: 'NODE' });
    assert.deepEqual(config.linux?.securityContext?.seccomp, { profileType: 'Localhost', localhostRef: '/p.json' });
  });

  it('keeps int64 exact as strings, beyond 2^53 too', () => {
    const r = config.linux?.resources;
    assert.equal(r?.memoryLimitInBytes, '9223372036854775807');
    assert.equal(r?.cpuQuota, '50000');
    assert.equal(r?.oomScoreAdj, '-997');
    assert.deepEqual(config.linux?.securityContext?.runAsUser, { value: '1000' });
  });

  it('keeps maps, lists and wrapped values', () => {
    assert.deepEqual(config.labels, { 'io.kubernetes.container.name': 'app' });
    assert.deepEqual(config.image, { image: '127.0.0.1:5000/inplace/app:v1', annotations: { k: 'v' } });
    assert.deepEqual(config.linux?.resources?.unified, { 'memory.high': '1' });
    assert.deepEqual(config.linux?.securityContext?.capabilities, { addCapabilities: ['NET_ADMIN'], dropCapabilities: ['ALL'] });
    assert.deepEqual(config.linux?.securityContext?.maskedPaths, ['/proc/kcore']);
  });

  it('round-trips through the wire: serializing and decoding keeps every field', () => {
    const type = criPackageDefinition()['runtime.v1.ContainerConfig'] as unknown as {
      serialize(v: unknown): Buffer;
      deserialize(b: Buffer): Record<string, unknown>;
    };
    const back = type.deserialize(type.serialize(config)) as typeof config;
    assert.equal(back.linux?.resources?.memoryLimitInBytes, '9223372036854775807');
    assert.equal(back.linux?.securityContext?.readonlyRootfs, true);
    assert.equal(back.linux?.securityContext?.noNewPrivs, true);
    assert.equal(back.stopSignal, 'SIGTERM');
    assert.deepEqual(back.CDIDevices, [{ name: 'vendor.com/gpu=0' }]);
    assert.equal(back.mounts?.[0].uidMappings?.[0].hostId, 1000);
  });

  it('reads camelCase JSON as well', () => {
    const c = containerConfigFromJson({ workingDir: '/w', logPath: 'a/0.log', stopSignal: 'SIGKILL' });
    assert.deepEqual(c, { workingDir: '/w', logPath: 'a/0.log', stopSignal: 'SIGKILL' });
  });

  it('drops fields the proto does not know', () => {
    assert.deepEqual(containerConfigFromJson({ working_dir: '/w', no_such_field: 1 }), { workingDir: '/w' });
  });

  it('reads a sandbox config', () => {
    const s = sandboxConfigFromJson(
      parseJsonLossless('{"metadata":{"name":"p","uid":"u","namespace":"ns"},"hostname":"p","log_directory":"/tmp/l","port_mappings":[{"protocol":1,"container_port":80}],"linux":{"security_context":{"namespace_options":{"pid":1}}}}'),
    );
    assert.deepEqual(s.metadata, { name: 'p', uid: 'u', namespace: 'ns' });
    assert.equal(s.logDirectory, '/tmp/l');
    assert.deepEqual(s.portMappings, [{ protocol: 'UDP', containerPort: 80 }]);
    assert.equal(s.linux?.securityContext?.namespaceOptions?.pid, 'CONTAINER');
  });

  it('reads containerd\'s info document: sandbox id and config', () => {
    const info = { info: `{"sandboxID":"sb1","pid":42,"config":${CONTAINERD_CONFIG_JSON}}` };
    const r = readContainerInfo(info, 'c1');
    assert.equal(r.sandboxId, 'sb1');
    assert.equal(r.config.workingDir, '/app');
  });

  it('says which container has no info', () => {
    assert.throws(() => readContainerInfo({}, 'c1'), (e: Error & { kind?: string }) => e.kind === 'FailedPrecondition' && /container "c1"/.test(e.message));
  });
});

describe('lossless JSON parsing', () => {
  it('keeps big integers as strings and leaves strings, floats and small integers alone', () => {
    assert.deepEqual(parseJsonLossless('{"a":9007199254740993,"b":"9007199254740993 \\" x","c":1.5e3,"d":-12,"e":[1,-9223372036854775808]}'), {
      a: '9007199254740993',
      b: '9007199254740993 " x',
      c: 1500,
      d: -12,
      e: [1, '-9223372036854775808'],
    });
  });
});

describe('CRI nanoseconds to Date', () => {
  it('converts through BigInt to the millisecond', () => {
    assert.equal(nanosToDate('1795968733881623241')?.toISOString(), new Date(1795968733881).toISOString());
  });
  it('is undefined for 0', () => {
    assert.equal(nanosToDate('0'), undefined);
  });
});

describe('ContainerConfig for a replacement', () => {
  const config = containerConfigFromJson(parseJsonLossless(CONTAINERD_CONFIG_JSON));
  const native = toContainerSpec(config, { metadata: { name: 'p' } }, 'pod1').native as CriNative;
  const spec = toContainerSpec(config, { metadata: { name: 'p' } }, 'pod1');

  it('applies attempt, image and labels, and moves a kubelet-style log path to the new attempt', () => {
    const out = toContainerConfig({ ...spec, attempt: 3, image: '127.0.0.1:5000/inplace/app:v2', labels: { ...spec.labels, op: 'x' } }, native);
    assert.deepEqual(out.metadata, { name: 'app', attempt: 3 });
    assert.equal(out.image?.image, '127.0.0.1:5000/inplace/app:v2');
    assert.deepEqual(out.image?.annotations, { k: 'v' });
    assert.equal(out.labels?.op, 'x');
    assert.equal(out.logPath, 'app/3.log');
    assert.equal(out.annotations?.['io.kubernetes.container.restartCount'], '3');
  });

  it('adds no restartCount annotation where kubelet did not put one', () => {
    const out = toContainerConfig({ ...spec, attempt: 3, annotations: {} }, native);
    assert.deepEqual(out.annotations, {});
  });

  it('keeps what the domain spec does not model', () => {
    const out = toContainerConfig({ ...spec, attempt: 3 }, native);
    assert.deepEqual(out.linux, config.linux);
    assert.deepEqual(out.devices, config.devices);
    assert.deepEqual(out.mounts, config.mounts);
    assert.deepEqual(out.CDIDevices, config.CDIDevices);
    assert.equal(out.stopSignal, 'SIGTERM');
    assert.equal(out.image, config.image);
  });

  it('leaves other log paths alone', () => {
    assert.equal(attemptLogPath('app.log', 4), 'app.log');
    assert.equal(attemptLogPath('0.log', 4), '4.log');
  });
});

describe('CRI container events from two ListContainers snapshots', () => {
  const item = (id: string, state: string): Container__Output =>
    ({ id, podSandboxId: 'p', state, createdAt: '1795968733881623241', metadata: { name: id, attempt: 0 } }) as Container__Output;
  const at = new Date(1_800_000_000_000);

  it('reports each step a container passed between two polls, in order', () => {
    const prev = snapshotOf(new Map(), [item('a', 'CONTAINER_RUNNING'), item('b', 'CONTAINER_CREATED'), item('gone', 'CONTAINER_EXITED')]);
    const events = diffSnapshots(prev, [item('a', 'CONTAINER_EXITED'), item('b', 'CONTAINER_EXITED'), item('new', 'CONTAINER_RUNNING')], at);
    assert.deepEqual(
      events.map((e) => `${e.containerId}:${e.type}`),
      ['a:stopped', 'b:started', 'b:stopped', 'new:created', 'new:started', 'gone:deleted'],
    );
    assert.equal(events.find((e) => e.type === 'created')?.at.getTime(), 1795968733881);
    assert.equal(events.find((e) => e.type === 'deleted')?.podId, 'p');
  });

  it('reports a container stopped and removed between two polls as stopped, then deleted', () => {
    const prev = snapshotOf(new Map(), [item('a', 'CONTAINER_RUNNING'), item('c', 'CONTAINER_CREATED')]);
    assert.deepEqual(
      diffSnapshots(prev, [], at).map((e) => `${e.containerId}:${e.type}`),
      ['a:stopped', 'a:deleted', 'c:deleted'],
    );
  });

  it('reports nothing when nothing changed, and ignores an unknown state', () => {
    const prev = snapshotOf(new Map(), [item('a', 'CONTAINER_RUNNING')]);
    assert.deepEqual(diffSnapshots(prev, [item('a', 'CONTAINER_RUNNING')], at), []);
    assert.deepEqual(diffSnapshots(prev, [item('a', 'CONTAINER_UNKNOWN')], at), []);
    assert.equal(snapshotOf(prev, [item('a', 'CONTAINER_UNKNOWN')]).get('a')?.state, 'running');
  });
});
