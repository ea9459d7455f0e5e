// Pinning on CRI, the logic without a runtime: which containerd releases act on the pinned label, which
// records an image has, and how long pinImage waits for CRI's report to follow a label change.
import assert from 'node:assert/strict';
import type { Clock } from '../../src/clock.js';
import { AgentError } from '../../src/errors.js';
import type { Image__Output } from '../../src/gen/runtime/v1/Image.js';
import type { CriClient } from '../../src/runtime/cri/client.js';
import { toImage } from '../../src/runtime/cri/convert.js';
import { containerdNames, pinImage, PINNED_LABEL, type PinImageDeps } from '../../src/runtime/cri/pin-image.js';
import { pinnedLabelSupport, type PinnedLabelSupport } from '../../src/runtime/cri/pinned-label-support.js';

describe('pinnedLabelSupport', () => {
  const cases: [string, string, PinnedLabelSupport][] = [
    ['containerd', '1.6.20~ds1', 'none'],
    ['containerd', 'v1.6.21', 'none'],
    ['containerd', '1.6.22', 'on-load'],
    ['containerd', 'v1.6.24', 'on-load'],
    ['containerd', 'v1.6.25', 'live'],
    ['containerd', 'v1.7.2', 'none'],
    ['containerd', 'v1.7.3', 'on-load'],
    ['containerd', 'v1.7.9', 'on-load'],
    ['containerd', 'v1.7.10', 'live'],
    ['containerd', 'v2.0.0', 'live'],
    ['containerd', '1.5.18', 'none'],
    ['containerd', 'devel', 'unknown'],
    ['cri-o', '1.30.0', 'unknown'],
  ];
  for (const [name, version, want] of cases) {
    it(`${name} ${version}: ${want}`, () => assert.equal(pinnedLabelSupport(name, version), want));
  }
});

describe('toImage', () => {
  it('reports pinned as CRI does (Image.pinned, field 8)', () => {
    const wire = { id: 'sha256:1', repoTags: [], repoDigests: [], size: '7', uid: null, username: '', spec: null, pinned: true };
    assert.equal(toImage(wire as Image__Output).pinned, true);
    assert.equal(toImage({ ...wire, pinned: false } as Image__Output).pinned, false);
  });
});

describe('containerdNames', () => {
  it('lists the tags, the repo digests and the id, each once', () => {
    const names = containerdNames({ id: 'sha256:1', repoTags: ['r/a:1', 'r/a:latest'], repoDigests: ['r/a@sha256:9', 'r/a@sha256:9'] });
    assert.deepEqual(names, ['r/a:1', 'r/a:latest', 'r/a@sha256:9', 'sha256:1']);
  });
});

/** A clock whose sleep moves time on at once. */
class SteppingClock implements Clock {
  t = 0;
  now(): number {
    return this.t;
  }
  sleep(ms: number): Promise<void> {
    this.t += ms;
    return Promise.resolve();
  }
}

/** pinImage's dependencies over an image whose reported pinned state flips after `flipAfter` status reads. */
function setup(support: PinnedLabelSupport, flipAfter: number, missing: string[] = []) {
  const labels = new Map<string, string>();
  let reads = 0;
  const image = (): Image__Output =>
    ({ id: 'sha256:1', repoTags: ['r/a:1'], repoDigests: ['r/a@sha256:9'], pinned: reads++ > flipAfter }) as Image__Output;
  const client = { endpoint: 'unix:///x.sock', imageStatus: () => Promise.resolve({ image: image(), info: {} }) } as unknown as CriClient;
  const images = {
    setImageLabel: (name: string, key: string, value: string) => {
      if (missing.includes(name)) return Promise.reject(new AgentError('NotFound', `image "${name}" not found`));
      labels.set(`${name} ${key}`, value);
      return Promise.resolve();
    },
  } as unknown as PinImageDeps['images'];
  const clock = new SteppingClock();
  const deps: PinImageDeps = { client, images, support: () => Promise.resolve(support), clock, settleMs: 1000, pollMs: 50 };
  return { deps, labels, clock, reads: () => reads };
}

describe('pinImage', () => {
  it('labels every record and waits for a live runtime to report the image pinned', async () => {
    const s = setup('live', 3);
    assert.equal(await pinImage(s.deps, 'r/a:1', true), true);
    assert.deepEqual([...s.labels.keys()].sort(), ['r/a:1', 'r/a@sha256:9', 'sha256:1'].map((n) => `${n} ${PINNED_LABEL}`));
    assert.equal(s.clock.t, 150);
  });

  it('gives up after settleMs and returns what the runtime reports', async () => {
    const s = setup('unknown', 1_000_000);
    assert.equal(await pinImage(s.deps, 'r/a:1', true), false);
    assert.equal(s.clock.t, 1000);
  });

  it('reads once where the runtime ignores label changes (containerd 1.6.20)', async () => {
    for (const support of ['none', 'on-load'] as const) {
      const s = setup(support, 1_000_000);
      assert.equal(await pinImage(s.deps, 'r/a:1', true), false);
      assert.equal(s.clock.t, 0);
      assert.equal(s.reads(), 2, 'one ImageStatus to resolve the names, one to read the result');
    }
  });

  it('removes the label by setting it empty', async () => {
    const s = setup('none', 1_000_000);
    assert.equal(await pinImage(s.deps, 'r/a:1', false), false);
    assert.deepEqual([...new Set(s.labels.values())], ['']);
  });

  it('skips records that are gone, and is NotFound when all are', async () => {
    const some = setup('none', 0, ['r/a:1']);
    await pinImage(some.deps, 'r/a:1', true);
    assert.equal(some.labels.size, 2);
    const all = setup('none', 0, ['r/a:1', 'r/a@sha256:9', 'sha256:1']);
    await assert.rejects(pinImage(all.deps, 'r/a:1', true), (err: unknown) => AgentError.is(err, 'NotFound') && /no image record/.test(err.message));
  });
});
