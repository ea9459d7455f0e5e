// CriRuntime.pinImage against the sandboxes' real containerd 1.6 and 2.x (scripts/sandbox up): the pinned
// label lands on every containerd record of the image (tag, repo digest, id) and goes again, and pinImage
// returns what CRI reports: true on 2.x, always false before 1.6.22 (the 1.6 sandbox runs 1.6.20). The image is this
// suite's own, pushed to a private registry, so no other test sees the label.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { AgentError } from '../../src/errors.js';
import { ContainerdClient } from '../../src/runtime/containerd/client.js';
import { CriRuntime } from '../../src/runtime/cri/cri-runtime.js';
import { PINNED_LABEL, PINNED_LABEL_VALUE } from '../../src/runtime/cri/pin-image.js';
import { pinnedLabelSupport, type PinnedLabelSupport } from '../../src/runtime/cri/pinned-label-support.js';
import type { Image } from '../../src/runtime/types.js';
import { buildImage, buildLayer, pushImage } from '../support/registry-images.js';
import { removeCriImage } from '../testbed/cri-pods.js';
import { startRegistry, type RegistryServer } from '../support/registry-server.js';
import { requireRuntime } from '../support/require-runtime.js';
import { criTargets } from '../support/runtime-matrix.js';

for (const target of criTargets()) {
  describe(`CriRuntime.pinImage against ${target.title}`, function () {
    this.timeout(60_000);
    const env = target.env;
    const rt = new CriRuntime(env.criEndpoint);
    const records = new ContainerdClient(env.criEndpoint);
    const run = randomBytes(4).toString('hex');
    let registry: RegistryServer | undefined;
    let support: PinnedLabelSupport;
    let ref = '';
    let image: Image;

    /** The pinned label of each containerd record of the image, by record name. */
    const pinLabels = async (): Promise<Record<string, string | undefined>> => {
      const out: Record<string, string | undefined> = {};
      for (const name of [...image.repoTags, ...image.repoDigests, image.id]) out[name] = (await records.getImage(name)).labels[PINNED_LABEL];
      return out;
    };
    const every = (value: string | undefined) => Object.fromEntries([...image.repoTags, ...image.repoDigests, image.id].map((n) => [n, value]));

    /** What CRI reports for the image, through ImageStatus and through ListImages. */
    const reported = async (): Promise<{ status: boolean | undefined; list: boolean | undefined }> => ({
      status: (await rt.inspectImage(ref))?.pinned,
      list: (await rt.listImages()).find((i) => i.id === image.id)?.pinned,
    });

    before(async function () {
      await requireRuntime(this, `containerd (CRI) at ${env.criEndpoint}`, () => rt.version());
      const v = await rt.version();
      support = pinnedLabelSupport(v.name, v.version);
      registry = await startRegistry();
      const built = buildImage([buildLayer([{ path: 'etc/pin', data: Buffer.from(`${run}\n`) }])], `pin-${run}`);
      ref = await pushImage({ registry: registry.host }, `pin/app-${run}`, 'v1', built);
      await rt.pullImage(ref);
      const found = await rt.inspectImage(ref);
      assert.ok(found, `${ref} pulled`);
      image = found;
      assert.equal(image.repoDigests.length, 1, JSON.stringify(image));
    });

    after(async () => {
      if (image) await removeCriImage(env.criEndpoint, image.id);
      await registry?.stop();
      records.close();
      rt.close();
    });

    it('labels the tag, repo digest and id records and returns what CRI then reports', async () => {
      const targets = await Promise.all([...image.repoTags, ...image.repoDigests, image.id].map(async (n) => (await records.getImage(n)).target));
      const pinned = await rt.pinImage(ref, true);
      assert.deepEqual(await pinLabels(), every(PINNED_LABEL_VALUE));
      assert.deepEqual(await reported(), { status: pinned, list: pinned });
      // containerd 2.x acts on the label at once (support 'live'); Debian's 1.6.20 ('none') stores it on
      // every record and never reports the image pinned.
      assert.equal(support, target.major === 2 ? 'live' : 'none');
      assert.equal(pinned, target.major === 2);
      // The update wrote each record back whole: its target is the one it had, and containerd still answers.
      const after = await Promise.all([...image.repoTags, ...image.repoDigests, image.id].map(async (n) => (await records.getImage(n)).target));
      assert.deepEqual(after, targets);
      assert.match(after[0]?.digest ?? '', /^sha256:[0-9a-f]{64}$/);
      await rt.version();
    });

    it('pins by repo digest and by image id as by tag, and pinning twice changes nothing', async () => {
      await rt.pinImage(ref, false);
      const byDigest = await rt.pinImage(image.repoDigests[0], true);
      assert.deepEqual(await pinLabels(), every(PINNED_LABEL_VALUE));
      const byId = await rt.pinImage(image.id, true);
      assert.equal(byId, byDigest);
      assert.deepEqual(await pinLabels(), every(PINNED_LABEL_VALUE));
    });

    it('unpins: the label leaves every record, the CRI plugin\'s own label stays', async () => {
      await rt.pinImage(ref, true);
      assert.equal(await rt.pinImage(ref, false), false);
      assert.deepEqual(await pinLabels(), every(undefined));
      assert.equal((await records.getImage(image.id)).labels['io.cri-containerd.image'], 'managed');
      assert.deepEqual(await reported(), { status: false, list: false });
    });

    it('a re-pull by tag drops the label from the tag record only; pinning again restores it', async () => {
      await rt.pinImage(ref, true);
      await rt.pullImage(ref);
      const after = await pinLabels();
      assert.equal(after[image.repoTags[0]], undefined, 'containerd re-creates the pulled name\'s record whole');
      assert.equal(after[image.repoDigests[0]], PINNED_LABEL_VALUE);
      assert.equal(after[image.id], PINNED_LABEL_VALUE);
      await rt.pinImage(ref, true);
      assert.deepEqual(await pinLabels(), every(PINNED_LABEL_VALUE));
    });

    it('fails with NotFound naming an image that is not present', async () => {
      const missing = `${registry?.host ?? '127.0.0.1:1'}/pin/missing-${run}:v1`;
      await assert.rejects(rt.pinImage(missing, true), (err: unknown) => {
        assert.ok(AgentError.is(err, 'NotFound'), String(err));
        assert.match(err.message, new RegExp(missing.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')));
        return true;
      });
    });
  });
}
