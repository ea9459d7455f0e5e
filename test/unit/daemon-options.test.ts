// The daemon's settings: a bad value is refused naming the flag or the environment variable it came from.
import assert from 'node:assert/strict';
import { daemonCommand, daemonOptions } from '../../src/daemon/options.js';

function parse(args: string[], env: Record<string, string> = {}) {
  const saved = { ...process.env };
  Object.assign(process.env, env);
  try {
    const cmd = daemonCommand('test').exitOverride();
    cmd.parse(args, { from: 'user' });
    return daemonOptions(cmd);
  } finally {
    for (const k of Object.keys(env)) delete process.env[k];
    Object.assign(process.env, saved);
  }
}

describe('daemon options', () => {
  it('names the environment variable that held a bad duration', () => {
    assert.throws(() => parse([], { INPLACE_AGENT_GRACE: 'zz' }), /^Error: INPLACE_AGENT_GRACE \(--grace\): invalid duration "zz"/);
    assert.throws(() => parse(['--grace', 'zz']), /^Error: --grace: invalid duration "zz"/);
  });

  it('refuses a --metrics-addr that is not HOST:PORT, in words', () => {
    assert.throws(() => parse(['--metrics-addr', 'nonsense']), (err: Error) => {
      assert.match(err.message, /--metrics-addr: expected HOST:PORT .* got "nonsense"/);
      assert.doesNotMatch(err.message, /NaN|options\.port/);
      return true;
    });
    assert.throws(() => parse(['--metrics-addr', '127.0.0.1:99999']), /--metrics-addr: expected HOST:PORT/);
    assert.equal(parse(['--metrics-addr', '127.0.0.1:0']).metricsAddr, '127.0.0.1:0');
    // The DaemonSet's form, for a pod IP of either family; an IPv6 address without brackets is refused.
    assert.equal(parse(['--metrics-addr', '[fd00:10:244::5]:9464']).metricsAddr, '[fd00:10:244::5]:9464');
    assert.equal(parse(['--metrics-addr', '[10.88.78.1]:9464']).metricsAddr, '[10.88.78.1]:9464');
    assert.throws(() => parse(['--metrics-addr', 'fd00:10:244::5:9464']), /--metrics-addr: .*an IPv6 address goes in brackets \(\[fd00:10:244::5\]:9464\)/);
  });

  it('refuses --max-parallel-pulls 0 instead of taking it as unlimited', () => {
    assert.throws(() => parse(['--max-parallel-pulls', '0']), /--max-parallel-pulls must be a whole number of at least 1, got "0"/);
    assert.equal(parse(['--max-parallel-pulls', '1']).maxParallelPulls, 1);
  });

  it('takes a liveness bound on the runtime, a few minutes by default', () => {
    assert.equal(parse([]).livenessRuntimeTimeoutMs, 3 * 60_000);
    assert.equal(parse(['--liveness-runtime-timeout', '2s']).livenessRuntimeTimeoutMs, 2000);
    assert.throws(() => parse(['--liveness-runtime-timeout', '0']), /--liveness-runtime-timeout must be between/);
  });

  it('bounds each runtime call and each API request at 60 s by default; 0 means no deadline; a bad value names its flag', () => {
    const byDefault = parse([]);
    assert.equal(byDefault.runtimeCallTimeoutMs, 60_000);
    assert.equal(byDefault.kubeRequestTimeoutMs, 60_000);
    assert.equal(parse(['--runtime-call-timeout', '5s']).runtimeCallTimeoutMs, 5000);
    assert.equal(parse(['--kube-request-timeout', '0']).kubeRequestTimeoutMs, 0);
    assert.equal(parse([], { INPLACE_AGENT_KUBE_REQUEST_TIMEOUT: '90s' }).kubeRequestTimeoutMs, 90_000);
    assert.throws(() => parse(['--kube-request-timeout', 'banana']), /--kube-request-timeout/);
    assert.throws(() => parse(['--runtime-call-timeout', '5']), /--runtime-call-timeout/);
  });

  // Each on/off flag: its variable by its value (true/false/1/0, any case), the flag winning, anything else refused.
  const onOffFlags: { flag: string; env: string; key: 'prewarmPin' | 'fleetPrewarm' | 'rollouts'; byDefault: boolean }[] = [
    { flag: '--prewarm-pin', env: 'INPLACE_AGENT_PREWARM_PIN', key: 'prewarmPin', byDefault: false },
    { flag: '--no-fleet-prewarm', env: 'INPLACE_AGENT_FLEET_PREWARM', key: 'fleetPrewarm', byDefault: true },
    { flag: '--no-rollouts', env: 'INPLACE_AGENT_ROLLOUTS', key: 'rollouts', byDefault: true },
  ];
  for (const f of onOffFlags) {
    it(`reads ${f.env} by its value, and ${f.flag} wins over it`, () => {
      assert.equal(parse([])[f.key], f.byDefault);
      for (const on of ['true', 'TRUE', 'True', '1']) assert.equal(parse([], { [f.env]: on })[f.key], true, `${f.env}=${on}`);
      for (const off of ['false', 'FALSE', 'False', '0']) assert.equal(parse([], { [f.env]: off })[f.key], false, `${f.env}=${off}`);
      // The flag given on the command line wins over the variable.
      const flagSays = f.flag.startsWith('--no-') ? false : true;
      assert.equal(parse([f.flag], { [f.env]: String(!flagSays) })[f.key], flagSays);
    });

    it(`refuses ${f.env} that is not true, false, 1 or 0, naming it`, () => {
      for (const bad of ['yes', 'off', '', '2', 'tru']) {
        assert.throws(() => parse([], { [f.env]: bad }), (err: Error) => err.message === `${f.env} must be true, false, 1 or 0, got "${bad}"`, `${f.env}=${bad}`);
      }
    });
  }
});
