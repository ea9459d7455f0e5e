import assert from 'node:assert/strict';
import { parsePrewarmList } from '../../src/daemon/image-list-warmer.js';

describe('prewarm list', () => {
  it('reads one reference per line, skipping blanks, comments and repeats', () => {
    const text = '# images for the 1.5 rollout\nreg.local/web:1.5.0\n\n  reg.local/side:2   # sidecar\nreg.local/web:1.5.0\n';
    assert.deepEqual(parsePrewarmList(text, 'list'), ['reg.local/web:1.5.0', 'reg.local/side:2']);
  });
  it('names the file and line of a bad reference', () => {
    assert.throws(() => parsePrewarmList('reg.local/ok:1\nNot A Ref\n', '/etc/prewarm'), /\/etc\/prewarm:2: invalid image reference "Not A Ref"/);
  });
});
