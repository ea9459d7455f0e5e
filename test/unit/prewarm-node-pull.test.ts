import assert from 'node:assert/strict';
import { pullAll } from '../../src/controllers/image-prewarm/node-pull.js';
import { freshEntry, type NodePartDeps } from '../../src/controllers/image-prewarm/node-part.js';
import type { ImagePrewarm } from '../../src/controllers/image-prewarm/types.js';
import { silentLogger } from '../../src/log.js';
import { ManualClock } from '../support/manual-timers.js';

const pw: ImagePrewarm = { metadata: { name: 'web-v2', uid: 'u1', generation: 1 }, spec: { images: ['reg/app:v2'] } } as ImagePrewarm;

/** A node's pull of pw on the manual clock: each image's pull takes pullMs, reporting progress every 500 ms. */
function node(pullMs: number) {
  const clock = new ManualClock();
  const records: string[] = [];
  const d = {
    clock,
    log: silentLogger(),
    leaseSeconds: 15,
    progressEveryMs: 2000,
    backoffBaseMs: 1000,
    slots: { renew: async () => undefined },
    keyring: async () => undefined,
    record: {
      put: async (_name: string, e: { phase: string; images: { phase: string; bytesDone: number }[] }) => {
        records.push(`${e.phase} ${e.images[0].bytesDone}`);
      },
    },
    puller: {
      pull: async (_image: string, _o: unknown, progress: (done: number, total: number) => void) => {
        for (let t = 500; t <= pullMs; t += 500) {
          await clock.sleep(500);
          progress(t, pullMs);
        }
        return { ok: true, digest: 'sha256:1', pinned: false };
      },
    },
  } as unknown as NodePartDeps;
  return { clock, records, run: () => pullAll(d, pw, freshEntry(pw, clock.now()), { lease: undefined }, async () => undefined) };
}

describe('fleet pre-warm: a node records its pull', () => {
  it('a pull done within progressEveryMs goes from Waiting to Succeeded in one write', async () => {
    const n = node(1500);
    const done = n.run();
    await n.clock.until(done, 500);
    assert.deepEqual(n.records, ['Succeeded 1500']);
  });

  it('a longer pull is recorded Pulling once progressEveryMs has passed, then every progressEveryMs, then its outcome', async () => {
    const n = node(5000);
    const done = n.run();
    await n.clock.until(done, 500);
    assert.deepEqual(n.records, ['Pulling 1500', 'Pulling 4000', 'Succeeded 5000']);
  });
});
