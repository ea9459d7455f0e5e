// How the installed `inplace-agent` command starts node: its shebang carries the V8 flags (env -S), and every
// launcher that runs `node main.js` itself takes them from there.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const main = path.resolve(here, '../../src/daemon/main.js');

describe('daemon launch line', () => {
  const shebang = readFileSync(main, 'utf8').split('\n', 1)[0];
  const flags = shebang.replace(/^#!\/usr\/bin\/env -S node\s*/, '').split(/\s+/).filter(Boolean);

  it('keeps the young generation small, with flags this node accepts', () => {
    assert.match(shebang, /^#!\/usr\/bin\/env -S node /);
    assert.ok(flags.includes('--max-semi-space-size=1'), shebang);
    const r = spawnSync(process.execPath, [...flags, main, '--version'], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /^\d+\.\d+\.\d+/);
  });

});
