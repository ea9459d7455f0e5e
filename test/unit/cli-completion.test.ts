// `inplacectl completion bash|zsh`: the scripts load in their shell, and complete commands, subcommands,
// flags and flag values the way the command tree has them.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const CTL = path.join(path.dirname(fileURLToPath(import.meta.url)), '../../src/cli/main.js');

/** What the completion function offers for the words typed (the last one is being completed), in shell. */
function complete(shell: 'bash' | 'zsh', words: string[]): string[] {
  const script = spawnSync(process.execPath, [CTL, 'completion', shell], { encoding: 'utf8' });
  assert.equal(script.status, 0, script.stderr);
  const arr = words.map((w) => `'${w}'`).join(' ');
  const drive =
    shell === 'bash'
      ? `${script.stdout}\nCOMP_WORDS=(inplacectl ${arr}); COMP_CWORD=${words.length}; _inplacectl; printf '%s\\n' "\${COMPREPLY[@]}"`
      : `${script.stdout}\nsetopt ksharrays; COMP_WORDS=(inplacectl ${arr}); COMP_CWORD=${words.length}; _inplacectl; printf '%s\\n' "\${COMPREPLY[@]}"`;
  const res = spawnSync(shell, shell === 'zsh' ? ['-f', '-c', drive] : ['--norc', '-c', drive], { encoding: 'utf8', env: { ...process.env, HOME: '/nonexistent' } });
  assert.equal(res.status, 0, res.stderr);
  const offered = res.stdout.split('\n').filter(Boolean).sort();
  // zsh's compgen (bashcompinit) leaves matching the typed prefix to zsh's completion system, which does it
  // after the function returns: done here the same way.
  return shell === 'zsh' ? offered.filter((w) => w.startsWith(words[words.length - 1])) : offered;
}

for (const shell of ['bash', 'zsh'] as const) {
  describe(`inplacectl completion ${shell}`, () => {
    it('completes commands and subcommands', () => {
      assert.deepEqual(complete(shell, ['p']), ['pods', 'prewarm', 'pull']);
      assert.deepEqual(complete(shell, ['prewarm', '']), ['create', 'delete', 'status']);
      assert.deepEqual(complete(shell, ['completion', '']), ['bash', 'zsh']);
    });

    it('completes the flags of the command typed, past the values of other flags', () => {
      const flags = complete(shell, ['-o', 'json', 'restart', 'ns/web', 'app', '--m']);
      assert.deepEqual(flags, ['--min-ready']);
      assert.ok(complete(shell, ['--agent', 'unix:///x.sock', 'pull', '--']).includes('--pin'));
    });

    it('completes the values of flags with fixed choices', () => {
      assert.deepEqual(complete(shell, ['-o', '']), ['json', 'text', 'yaml']);
    });
  });
}
