// Pins with owners against the sandboxes' real containerd 1.6 and 2.x (issue 28, finding 8): an ImagePrewarm's
// pin holds while its prewarm wants it, an image two prewarms pin stays pinned until both let go, a pin made by
// hand stays, and the node's cap on pinned bytes refuses a pin beyond it. The labels are read from containerd's
// records; on 2.x CRI's report (what the kubelet's image GC goes by) is checked too (1.6.20 ignores the label).
// The images are this suite's own, in a private registry, so no other test sees the labels.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { PrewarmPins } from '../../src/controllers/image-prewarm/prewarm-pins.js';
import type { ImagePrewarm } from '../../src/controllers/image-prewarm/types.js';
import { ContainerdClient } from '../../src/runtime/containerd/client.js';
import { CriRuntime } from '../../src/runtime/cri/cri-runtime.js';
import { PINNED_LABEL } from '../../src/runtime/cri/pin-image.js';
import { PIN_OWNER_PREFIX } from '../../src/runtime/cri/pin-owners.js';
import type { Image } from '../../src/runtime/types.js';
import { buildImage, buildLayer, pushImage } from '../support/registry-images.js';
import { memoryLogger } from '../support/memory-logger.js';
import { removeCriImage } from '../testbed/cri-pods.js';
import { startRegistry, type RegistryServer } from '../support/registry-server.js';
import { requireRuntime } from '../support/require-runtime.js';
import { criTargets } from '../support/runtime-matrix.js';

const prewarm = (uid: string, images: string[], pin = true): ImagePrewarm => ({ metadata: { name: `pw-${uid}`, uid }, spec: { images, pin } });

for (const target of criTargets()) {
  describe(`prewarm pins with owners and a cap against ${target.title}`, function () {
    this.timeout(60_000);
    const env = target.env;
    const rt = new CriRuntime(env.criEndpoint);
    const records = new ContainerdClient(env.criEndpoint);
    const run = randomBytes(4).toString('hex');
    let registry: RegistryServer | undefined;
    const refs: string[] = [];
    const images: Image[] = [];

    /** The pinned label and the owners of the image's id record (every record carries the same). */
    const labels = async (i: number) => {
      const l = (await records.getImage(images[i].id)).labels;
      return { pinned: l[PINNED_LABEL] ?? '', owners: Object.keys(l).filter((k) => k.startsWith(PIN_OWNER_PREFIX)).map((k) => k.slice(PIN_OWNER_PREFIX.length)).sort() };
    };
    /** On 2.x, what CRI reports (the kubelet's image GC goes by it); 1.6.20 always reports false. */
    const criPinned = async (i: number, want: boolean) => {
      if (target.major === 2) assert.equal((await rt.inspectImage(refs[i]))?.pinned, want, `CRI reports ${refs[i]} pinned=${want}`);
    };

    before(async function () {
      await requireRuntime(this, `containerd (CRI) at ${env.criEndpoint}`, () => rt.version());
      registry = await startRegistry();
      for (const n of [0, 1]) {
        const built = buildImage([buildLayer([{ path: `etc/owned-${n}`, data: Buffer.from(`${run}-${n}\n`) }])], `owned-${run}-${n}`);
        refs.push(await pushImage({ registry: registry.host }, `owned/app-${run}`, `v${n}`, built));
        await rt.pullImage(refs[n]);
        images.push((await rt.inspectImage(refs[n]))!);
      }
    });

    after(async () => {
      for (const i of images) await removeCriImage(env.criEndpoint, i.id).catch(() => undefined);
      await registry?.stop();
      records.close();
      rt.close();
    });

    it('two prewarms pin one image: it stays pinned until both are gone, and the sweep takes off only the gone one\'s', async () => {
      const pins = new PrewarmPins(rt, 0, memoryLogger().logger);
      const [a, b] = [`a-${run}`, `b-${run}`];
      assert.deepEqual(await pins.pin({ uid: a, name: `pw-${a}` }, refs[0]), { pinned: target.major === 2 });
      await pins.pin({ uid: b, name: `pw-${b}` }, refs[0]);
      assert.deepEqual(await labels(0), { pinned: 'pinned', owners: [a, b].sort() });
      await pins.sweep([prewarm(b, [refs[0]])]); // a's prewarm is gone
      assert.deepEqual(await labels(0), { pinned: 'pinned', owners: [b] });
      await criPinned(0, true);
      await pins.sweep([prewarm(b, [refs[0]], false)]); // b no longer pins
      assert.deepEqual(await labels(0), { pinned: '', owners: [] });
      await criPinned(0, false);
    });

    it('a prewarm that no longer names the image lets go of it; one that still does keeps it', async () => {
      const pins = new PrewarmPins(rt, 0, memoryLogger().logger);
      const c = `c-${run}`;
      await pins.pin({ uid: c, name: `pw-${c}` }, refs[0]);
      await pins.sweep([prewarm(c, [refs[0]])]);
      assert.deepEqual(await labels(0), { pinned: 'pinned', owners: [c] });
      await pins.sweep([prewarm(c, [refs[1]])]);
      assert.deepEqual(await labels(0), { pinned: '', owners: [] });
    });

    it('a pin made by hand (inplacectl pull --pin) stays when the prewarm that also pinned the image is gone', async () => {
      const pins = new PrewarmPins(rt, 0, memoryLogger().logger);
      const d = `d-${run}`;
      await rt.pinImage(refs[1], true);
      await pins.pin({ uid: d, name: `pw-${d}` }, refs[1]);
      await pins.sweep([]);
      assert.deepEqual(await labels(1), { pinned: 'pinned', owners: [] });
      await criPinned(1, true);
      await rt.pinImage(refs[1], false);
      assert.deepEqual(await labels(1), { pinned: '', owners: [] });
    });

    it('the cap: a pin that would take the pinned bytes over it is refused, naming the sizes; the image stays unpinned', async () => {
      const pinned = await rt.pinnedImages();
      const before = pinned.reduce((s, p) => s + p.size, 0);
      const pins = new PrewarmPins(rt, before + images[0].size, memoryLogger().logger);
      const e = `e-${run}`;
      assert.equal((await pins.pin({ uid: e, name: `pw-${e}` }, refs[0])).refused, undefined, 'within the cap');
      const over = await pins.pin({ uid: e, name: `pw-${e}` }, refs[1]);
      assert.match(over.refused ?? '', new RegExp(`not pinned: ${refs[1].replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} \\(.*\\) would take the images pinned on this node to .*, over its --max-pinned-bytes of`));
      assert.deepEqual(await labels(1), { pinned: '', owners: [] });
      assert.equal((await pins.pin({ uid: `f-${run}`, name: 'again' }, refs[0])).refused, undefined, 'an image already pinned adds no bytes');
      await pins.sweep([]);
      assert.deepEqual(await labels(0), { pinned: '', owners: [] });
    });
  });
}
