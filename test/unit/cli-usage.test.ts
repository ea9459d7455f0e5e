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
