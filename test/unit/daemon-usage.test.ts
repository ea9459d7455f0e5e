// inplace-agent's bad usage: one line with the program's name, where to look, exit 2, before anything starts.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { daemonCommand, daemonOptions } from '../../src/daemon/options.js';

const MAIN = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../src/daemon/main.js');
// A runtime that is never reached: a usage error must stop the start before any runtime is dialled.
const run = (...args: string[]) => spawnSync(process.execPath, [MAIN, '--runtime-timeout', '1ms', '--docker-host', 'unix:///nonexistent/d.sock', ...args], { encoding: 'utf8' });

describe('inplace-agent usage', () => {
  const cases: [string[], RegExp][] = [
    [['--runtime', 'banana'], /^inplace-agent: option '--runtime <kind>' argument 'banana' is invalid\. Allowed choices are auto, cri, docker\.\n/],
    [['--no-such-flag'], /^inplace-agent: unknown option '--no-such-flag'\n/],
    [['--log-level', 'trace'], /^inplace-agent: option '--log-level <level>' argument 'trace' is invalid\. Allowed choices are error, warn, info, debug\.\n/],
    [['--grace', '30'], /^inplace-agent: --grace needs a unit: "30s" for seconds, "30ms" for milliseconds \(got "30"\)\n/],
    [['--runtime-timeout', '0'], /^inplace-agent: --runtime-timeout must be between 1ms and 596h, got "0"\n/],
    [['--max-parallel-pulls', '0'], /^inplace-agent: --max-parallel-pulls must be a whole number of at least 1, got "0"\n/],
  ];
  for (const [args, message] of cases) {
    it(`${args.join(' ')}: exit 2, one line naming the program`, () => {
      const res = run(...args);
      assert.equal(res.status, 2, res.stderr);
      assert.match(res.stderr, message);
      assert.match(res.stderr, /\(run 'inplace-agent --help' for usage\)\n$/);
      assert.equal(res.stderr.trim().split('\n').length, 2, res.stderr);
    });
  }

  it('a start that fails for another reason (no runtime) exits 1', () => {
    const res = run('--runtime', 'docker', '--listen', 'unix:///nonexistent-dir/agent.sock');
    assert.equal(res.status, 1, res.stderr);
  });

  it('waits 10 s for a runtime socket by default (--runtime-timeout, INPLACE_AGENT_RUNTIME_TIMEOUT)', () => {
    const cmd = daemonCommand('test').exitOverride();
    cmd.parse([], { from: 'user' });
    assert.equal(daemonOptions(cmd).runtimeTimeoutMs, 10_000);
    const opt = cmd.options.find((o) => o.long === '--runtime-timeout');
    assert.equal(opt?.envVar, 'INPLACE_AGENT_RUNTIME_TIMEOUT');
  });
});
