// inplacectl's usage errors: exit 2 before anything is sent, with messages that say what is wrong once.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const CTL = path.join(path.dirname(fileURLToPath(import.meta.url)), '../../src/cli/main.js');
// No agent listens here: a usage error must be found before the agent is dialled.
const run = (...args: string[]) => spawnSync(process.execPath, [CTL, '--agent', 'unix:///nonexistent/agent.sock', ...args], { encoding: 'utf8' });

describe('inplacectl usage', () => {
  it('names --auth-file once when the file cannot be read', () => {
    const res = run('pull', '127.0.0.1:5000/x:1', '--auth-file', '/nonexistent/config.json');
    assert.equal(res.status, 2, res.stderr);
    assert.equal(res.stderr.match(/--auth-file/g)?.length, 1, res.stderr);
    assert.match(res.stderr, /cannot read \/nonexistent\/config\.json: ENOENT/);
  });

  it('shows --parallel without an invented default, and refuses 0', () => {
    const help = run('pull', '--help');
    assert.match(help.stdout.replace(/\s+/g, ' '), /--parallel <n> .*default: the agent's --max-parallel-pulls/);
    assert.doesNotMatch(help.stdout, /default: "0"/);
    const zero = run('pull', '127.0.0.1:5000/x:1', '--parallel', '0');
    assert.equal(zero.status, 2);
    assert.match(zero.stderr, /--parallel takes a whole number of at least 1, got "0"/);
  });

  it('refuses duplicate containers and --image for a container not restarted with exit 2', () => {
    assert.equal(run('restart', 'ns/pod', 'app', 'app').status, 2);
    const other = run('restart', 'ns/pod', 'app', '--image', 'side=127.0.0.1:5000/x:1');
    assert.equal(other.status, 2);
    assert.match(other.stderr, /--image names container "side", which is not one of the containers to restart \(app\)/);
  });
});

describe('inplacectl usage, as a new user meets it', () => {
  it('a one-letter typo prints one line and where to look, not the whole help', () => {
    const res = run('restat', 'ns/pod', 'app');
    assert.equal(res.status, 2);
    assert.deepEqual(res.stderr.trim().split('\n'), ["inplacectl: unknown command 'restat' (did you mean restart?)", "(run 'inplacectl --help' for usage)"]);
    const opt = run('restart', 'ns/pod', 'app', '--min-redy', '2s');
    assert.equal(opt.status, 2);
    assert.equal(opt.stderr.trim().split('\n').length, 2, opt.stderr);
    assert.match(opt.stderr, /did you mean --min-ready\?/);
    assert.match(opt.stderr, /run 'inplacectl restart --help' for usage/);
  });

  it('takes durations with a unit only (0 aside), for --grace as for --min-ready', () => {
    for (const flag of ['--grace', '--min-ready', '--timeout']) {
      const res = run('restart', 'ns/pod', 'app', flag, '5');
      assert.equal(res.status, 2, `${flag} 5: ${res.stderr}`);
      assert.match(res.stderr, new RegExp(`${flag} needs a unit: "5s" for seconds, "5ms" for milliseconds`));
    }
  });

  it('help shows no invented defaults for repeatable flags', () => {
    for (const args of [['restart', '--help'], ['prewarm', 'create', '--help']]) assert.doesNotMatch(run(...args).stdout, /default: \[\]/, args.join(' '));
  });

  it('get, watch and cancel with a malformed or short id are bad usage (exit 2), found before the agent is asked', () => {
    for (const cmd of ['get', 'watch', 'cancel']) {
      const res = run(cmd, '123');
      assert.equal(res.status, 2, `${cmd}: ${res.stderr}`);
      assert.match(res.stderr, /operation id "123" is too short: give the whole id or a prefix of at least 6 characters/);
    }
  });

  it('with -o json every error is one JSON object on stdout and one line on stderr, usage errors included', () => {
    const usage = run('-o', 'json', 'get', '123');
    assert.deepEqual(JSON.parse(usage.stdout), { error: 'operation id "123" is too short: give the whole id or a prefix of at least 6 characters', errorKind: 'InvalidArgument', exitCode: 2 });
    assert.equal(usage.stderr.trim().split('\n').length, 1);
    const flag = run('-o', 'json', 'restart', 'ns/pod', 'app', '--nope');
    assert.equal(flag.status, 2);
    assert.equal((JSON.parse(flag.stdout) as { exitCode: number }).exitCode, 2);
    const unreachable = run('-o', 'json', 'pods');
    assert.equal(unreachable.status, 1);
    const e = JSON.parse(unreachable.stdout) as { errorKind: string; exitCode: number };
    assert.deepEqual([e.errorKind, e.exitCode], ['Unavailable', 1]);
  });

  it('cancel --help says what a cancel does in each phase', () => {
    const help = run('cancel', '--help').stdout;
    for (const phase of ['pending', 'pulling images', 'creating / created', 'stopping .. started', 'verifying']) assert.match(help, new RegExp(`^  ${phase.replace(/[.]/g, '\\.')} +\\S`, 'm'), phase);
    assert.doesNotMatch(help, /the old containers keep running\)/);
  });

  it('version --client needs no agent', () => {
    const res = run('version', '--client');
    assert.equal(res.status, 0, res.stderr);
    assert.match(res.stdout, /^Client Version: \d+\.\d+\.\d+\n$/);
  });
});

describe("inplacectl and kubectl inplace, with kubectl's habits", () => {
  const PLUGIN = path.join(path.dirname(CTL), 'kubectl-inplace.js');
  // No kubeconfig anywhere: a usage error must be found before one is looked for.
  const env = { ...process.env, KUBECONFIG: '/nonexistent/kubeconfig', HOME: '/nonexistent' };
  const ctl = (...args: string[]) => spawnSync(process.execPath, [CTL, ...args], { encoding: 'utf8', env });
  const plugin = (...args: string[]) => spawnSync(process.execPath, [PLUGIN, ...args], { encoding: 'utf8', env });

  it('bare, each prints its help on stdout and exits 0, as kubectl does', () => {
    for (const [name, res] of [['inplacectl', ctl()], ['kubectl-inplace', plugin()]] as const) {
      assert.equal(res.status, 0, `${name}: ${res.stderr}`);
      assert.match(res.stdout, new RegExp(`^Usage: ${name} `));
      assert.match(res.stdout, /Exit status:\n {2}0 {2}success\n/);
    }
  });

  it('takes -o=json and -ojson as kubectl spells them, and -o yaml', () => {
    for (const o of [['-o=json'], ['-ojson'], ['--output=json']]) {
      const res = ctl(...o, 'get', '123');
      assert.equal(res.status, 2, `${o.join(' ')}: ${res.stderr}`);
      assert.equal((JSON.parse(res.stdout) as { exitCode: number }).exitCode, 2, o.join(' '));
    }
    const yaml = ctl('-o', 'yaml', 'get', '123');
    assert.equal(yaml.status, 2);
    assert.equal(yaml.stdout, `error: 'operation id "123" is too short: give the whole id or a prefix of at least 6 characters'\nerrorKind: InvalidArgument\nexitCode: 2\n`);
    const v = ctl('-o=yaml', 'version', '--client');
    assert.equal(v.status, 0, v.stderr);
    assert.match(v.stdout, /^client:\n {2}version: \d+\.\d+\.\d+\n$/);
    const bad = ctl('-o', 'xml', 'pods');
    assert.equal(bad.status, 2);
    assert.match(bad.stderr, /^inplacectl: option '-o, --output <format>' argument 'xml' is invalid\. Allowed choices are text, json, yaml\./);
  });

  it('version prints the client version first, then says the agent cannot be reached (exit 1)', () => {
    const res = ctl('--agent', 'unix:///nonexistent/agent.sock', 'version');
    assert.equal(res.status, 1);
    assert.equal(res.stdout, `Client Version: ${/Client Version: (\S+)/.exec(ctl('version', '--client').stdout)?.[1]}\n`);
    assert.match(res.stderr, /^inplacectl: cannot get the agent's version: cannot reach the agent at unix:\/\/\/nonexistent\/agent\.sock \(no such socket\)/);
    const json = ctl('--agent', 'unix:///nonexistent/agent.sock', '-o', 'json', 'version');
    const doc = JSON.parse(json.stdout) as { client: { version: string }; errorKind: string; exitCode: number };
    assert.deepEqual([typeof doc.client.version, doc.errorKind, doc.exitCode], ['string', 'Unavailable', 1]);
  });

  it('refuses --kubeconfig, --context and -n with a command of the agent socket (exit 2)', () => {
    for (const flag of [['--context', 'x'], ['-n', 'shop']]) {
      const res = ctl(...flag, 'pods');
      assert.equal(res.status, 2, res.stderr);
      assert.match(res.stderr, new RegExp(`^inplacectl: ${flag[0]} works with restart, prewarm and rollout only; pods talks to the agent socket`));
    }
  });

  it('every duration flag follows the one rule, naming the flag, before any cluster is looked for', () => {
    const cases: [string[], RegExp][] = [
      [['rollout', 'status', 'r', '-w', '--interval', '5'], /--interval needs a unit: "5s" for seconds, "5ms" for milliseconds \(got "5"\)/],
      [['rollout', 'status', 'r', '-w', '--interval', '0'], /--interval must be between 100ms and 596h, got "0"/],
      [['rollout', 'status', 'r', '--interval', 'banana'], /--interval: invalid duration "banana"/],
      [['prewarm', 'status', 'p', '-w', '--interval', '5'], /--interval needs a unit/],
      [['prewarm', 'status', 'p', '-w', '--interval', '0'], /--interval must be between 100ms and 596h, got "0"/],
      [['prewarm', 'create', 'p', '--image', 'busybox:1', '--deadline', '30'], /--deadline needs a unit: "30s"/],
      [['prewarm', 'create', 'p', '--image', 'busybox:1', '--refresh', '5s'], /--refresh must be 0 \(never\) or between 10s and 596h, got "5s"/],
      [['--request-timeout', '5', 'pods'], /--request-timeout needs a unit: "5s"/],
      [['restart', 'ns/pod', 'app', '--timeout', '0'], /--timeout must be between 1ms and 596h, got "0"/],
    ];
    for (const [args, message] of cases) {
      const res = ctl(...args);
      assert.equal(res.status, 2, `${args.join(' ')}: ${res.stderr}`);
      assert.match(res.stderr, message, args.join(' '));
      assert.match(res.stderr, /^inplacectl: /);
    }
    const viaPlugin = plugin('rollout', 'status', 'r', '--interval', '5');
    assert.equal(viaPlugin.status, 2);
    assert.match(viaPlugin.stderr, /^kubectl inplace: --interval needs a unit/);
    assert.equal(ctl('restart', 'ns/pod', 'app', '--grace', '0', '--request-timeout', '0', '--agent', 'unix:///nonexistent/a.sock').status, 1, 'grace 0 and request-timeout 0 are taken');
  });

  it('without any kubeconfig, says where it looked (exit 2)', () => {
    const res = spawnSync(process.execPath, [CTL, 'rollout', 'status', 'r'], { encoding: 'utf8', env: { PATH: process.env.PATH, HOME: '/nonexistent' } });
    assert.equal(res.status, 2, res.stderr);
    assert.match(res.stderr, /no Kubernetes API configured: give --kubeconfig, set \$KUBECONFIG, create ~\/\.kube\/config, or run in a cluster/);
  });
});
