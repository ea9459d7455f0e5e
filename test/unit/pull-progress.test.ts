import assert from 'node:assert/strict';
import { LeaseProgress, digestOfRef } from '../../src/runtime/containerd/lease-progress.js';
import { StallWatch } from '../../src/pull/stall-watch.js';
import { ManualClock } from '../support/pull-fakes.js';

const L1 = 'layer-sha256:' + 'a'.repeat(64);
const L2 = 'layer-sha256:' + 'b'.repeat(64);

describe('LeaseProgress (containerd ingests of one lease)', () => {
  it('sums offsets and totals of the lease\'s ingests, keeps committed blobs as done, ignores other leases', () => {
    const p = new LeaseProgress();
    const s1 = p.update(
      [
        { id: L1, type: 'ingests' },
        { id: L2, type: 'ingests' },
      ],
      [
        { ref: L1, offset: '100', total: '1000' },
        { ref: L2, offset: '50', total: '500' },
        { ref: 'layer-sha256:' + 'c'.repeat(64), offset: '999', total: '9999' },
      ],
    );
    assert.equal(s1.bytesDone, 150);
    assert.equal(s1.bytesTotal, 1500);
    assert.equal(s1.extracting, false);
    const s2 = p.update(
      [
        { id: 'sha256:' + 'a'.repeat(64), type: 'content' },
        { id: L2, type: 'ingests' },
        { id: 'extract-1-x sha256:zz', type: 'snapshots/overlayfs' },
      ],
      [{ ref: L2, offset: '400', total: '500' }],
    );
    assert.equal(s2.bytesDone, 1400);
    assert.equal(s2.layers.find((l) => l.id === digestOfRef(L1))?.status, 'done');
    assert.equal(s2.extracting, false, 'bytes still coming');
    const s3 = p.update([{ id: 'extract-1-x sha256:zz', type: 'snapshots/overlayfs' }], []);
    assert.equal(s3.bytesDone, 1500);
    assert.equal(s3.extracting, true);
  });
});

describe('StallWatch', () => {
  it('fires after stallMs without new bytes, restarts on bytes, holds while extracting', async () => {
    const clock = new ManualClock();
    let fired = -1;
    const w = new StallWatch(clock, 1000, (idle) => (fired = idle), 100);
    const p = (bytesDone: number, extracting = false) => w.progress({ layers: [], bytesDone, bytesTotal: 10, extracting });
    p(1);
    await clock.advance(900);
    p(2);
    await clock.advance(900);
    assert.equal(fired, -1);
    p(2, true);
    await clock.advance(5000);
    assert.equal(fired, -1, 'extracting: no bytes expected');
    p(2, false);
    await clock.advance(900);
    assert.equal(fired, -1);
    await clock.advance(200);
    assert.ok(fired >= 1000);
    w.close();
  });

  it('unarmed, waits for the first report before the deadline starts', async () => {
    const clock = new ManualClock();
    let fired = false;
    const w = new StallWatch(clock, 100, () => (fired = true), 10, false);
    await clock.advance(1000);
    assert.equal(fired, false);
    w.progress({ layers: [], bytesDone: 0, bytesTotal: 0, extracting: false });
    await clock.advance(150);
    assert.equal(fired, true);
  });

  it('does not fire after close', async () => {
    const clock = new ManualClock();
    let fired = false;
    const w = new StallWatch(clock, 100, () => (fired = true), 10);
    w.close();
    await clock.advance(1000);
    assert.equal(fired, false);
  });
});
