// The shipped systemd unit: `systemd-analyze verify` finds nothing to say about it, its hardening is what the
// docs explain, and the agent still works under the unit's own restrictions (read-only file system but its two
// directories, capability bounding set, no_new_privs), applied by test/support/unit-restrictions.ts because
// this machine's PID 1 is not systemd: a real restart on the sandbox's containerd, and --socket-group's chown.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { CriRuntime } from '../../src/runtime/cri/cri-runtime.js';
import { CriPodFixture } from '../testbed/cri-pods.js';
import type { TestPod } from '../testbed/pod-fixture.js';
import { sandboxEnv } from '../testbed/sandbox-env.js';
import { ctl, startAgent, type AgentProcess } from '../support/agent-process.js';
import { requireRuntime } from '../support/require-runtime.js';
import { UNIT_FILE, unitRestrictionsPrefix, unitSettings, unitText } from '../support/unit-restrictions.js';

const env = sandboxEnv();
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
/** The group given the agent's socket (its chown is what CAP_CHOWN is kept for). */
const SOCKET_GID = 4321;
/** Highest exposure `systemd-analyze security` may rate the unit (the unhardened unit rated 9.6). */
const MAX_EXPOSURE = 4.0;

/** systemd-analyze with args: exit status and everything it printed. */
function analyze(...args: string[]): { code: number | null; output: string } {
  const r = spawnSync('systemd-analyze', args, { encoding: 'utf8' });
  if (r.error) throw r.error;
  return { code: r.status, output: `${r.stdout}${r.stderr}` };
}

describe('systemd unit', function () {
  this.timeout(120_000);

  before(async function () {
    await requireRuntime(this, 'systemd-analyze (Debian package systemd)', async () => analyze('--version'));
  });

  it('systemd-analyze verify has nothing to say about it (and does speak up about a broken copy)', () => {
    const res = analyze('verify', UNIT_FILE);
    assert.equal(res.code, 0, res.output);
    assert.equal(res.output.trim(), '', 'no warning either: verify exits 0 even on settings it ignores');
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'inplace-unit-'));
    const broken = path.join(dir, 'inplace-agent.service');
    fs.writeFileSync(broken, unitText().replace('ProtectSystem=strict', 'ProtectSystem=strcit'));
    assert.match(analyze('verify', broken).output, /Failed to parse protect system value, ignoring: strcit/);
  });

  it('has the hardening a node agent can bear, rated low by systemd-analyze security', () => {
    const unit = unitSettings(unitText());
    const want: Record<string, string> = {
      ProtectSystem: 'strict',
      ProtectHome: 'yes',
      NoNewPrivileges: 'yes',
      CapabilityBoundingSet: 'CAP_CHOWN',
      RestrictAddressFamilies: 'AF_UNIX AF_INET AF_INET6 AF_NETLINK',
      PrivateTmp: 'yes',
    };
    for (const [k, v] of Object.entries(want)) assert.deepEqual(unit.get(k), [v], k);
    const rw = (unit.get('ReadWritePaths') ?? []).join(' ').split(/\s+/);
    assert.ok(rw.includes(`/var/lib/${unit.get('StateDirectory')![0]}`), `the state dir is writable: ${rw.join(' ')}`);
    assert.ok(rw.includes(`/run/${unit.get('RuntimeDirectory')![0]}`), `the socket dir is writable: ${rw.join(' ')}`);
    const res = analyze('security', '--offline=true', UNIT_FILE);
    const level = /Overall exposure level for inplace-agent\.service: (\d+\.\d+)/.exec(res.output);
    assert.ok(level, res.output.slice(-500));
    assert.ok(Number(level[1]) <= MAX_EXPOSURE, `exposure ${level[1]} > ${MAX_EXPOSURE}`);
  });

  it('every hardening setting is explained in docs/development.md', () => {
    const text = unitText();
    const hardening = text.slice(text.indexOf('# Hardening'), text.indexOf('[Install]'));
    const keys = [...unitSettings(hardening).keys()];
    assert.ok(keys.length >= 15, `hardening settings: ${keys.join(' ')}`);
    const doc = fs.readFileSync(path.join(root, 'docs/development.md'), 'utf8');
    const section = doc.slice(doc.indexOf('## systemd'));
    assert.ok(doc.includes('## systemd'), 'docs/development.md has a systemd section');
    for (const k of [...keys, 'MemoryDenyWriteExecute', 'SystemCallFilter']) assert.ok(section.includes(`\`${k}`), `${k} is explained`);
  });

  describe('the agent under the unit\'s restrictions', () => {
    let rt: CriRuntime;
    let fixture: CriPodFixture;
    let pod: TestPod;
    let agent: AgentProcess;

    before(async function () {
      rt = new CriRuntime(env.criEndpoint);
      await requireRuntime(this, 'cri', () => rt.version());
      fixture = new CriPodFixture(env.criEndpoint);
      pod = await fixture.create({ name: `unit-${process.pid}`, namespace: 'systemd-unit', containers: [{ name: 'app', image: env.images.appV1 }] });
      const unit = unitSettings(unitText());
      // The agent's directory (socket and state dir) stands in for the unit's ReadWritePaths.
      agent = await startAgent(['--runtime', 'cri', '--cri-endpoint', env.criEndpoint, '--socket-group', String(SOCKET_GID), '--min-ready', '0'], {
        prefix: (dir) => unitRestrictionsPrefix(unit, [dir]),
      });
    });
    after(async () => {
      await agent?.stop();
      if (pod) await fixture?.remove(pod).catch(() => undefined);
      fixture?.close();
      rt?.close();
    });

    it('runs with the bounding set and no_new_privs, on a read-only file system', () => {
      const status = fs.readFileSync(`/proc/${agent.child.pid}/status`, 'utf8');
      assert.match(status, /^CapBnd:\s+0000000000000001$/m, 'CAP_CHOWN only');
      assert.match(status, /^CapEff:\s+0000000000000001$/m);
      assert.match(status, /^NoNewPrivs:\s+1$/m);
      const mounts = fs.readFileSync(`/proc/${agent.child.pid}/mountinfo`, 'utf8').split('\n');
      const rootMount = mounts.find((l) => l.split(' ')[4] === '/');
      assert.match(rootMount ?? '', /^\S+ \S+ \S+ \S+ \/ ro[, ]/, `/ is read-only for the agent: ${rootMount}`);
      assert.equal(fs.statSync(agent.socket).gid, SOCKET_GID, 'the socket was given to --socket-group (CAP_CHOWN)');
    });

    it('restarts a container through the runtime socket and journals the operation in its state dir', async () => {
      const before = (await rt.listContainers({ podId: pod.podId })).find((c) => c.name === 'app' && c.state === 'running');
      const res = await ctl(agent.socket, 'restart', pod.name, 'app');
      assert.equal(res.code, 0, `${res.stdout}${res.stderr}\n${agent.log()}`);
      const after = (await rt.listContainers({ podId: pod.podId })).find((c) => c.name === 'app' && c.state === 'running');
      assert.ok(before && after && after.id !== before.id, 'app was recreated');
      const ops = await ctl(agent.socket, 'ops', '--pod', pod.name, '-o', 'json');
      assert.equal(ops.code, 0, ops.stderr);
      assert.match(ops.stdout, /"state":\s*"Succeeded"/);
      assert.ok(fs.readdirSync(agent.stateDir, { recursive: true }).length > 0, 'the journal was written');
    });
  });
});
