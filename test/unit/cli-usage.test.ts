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
