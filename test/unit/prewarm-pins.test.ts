// Prewarm pins without a runtime (issue 28, finding 8): which owners a sweep lets go of, when it runs, and how a
// pin over the node's cap reaches the fleet's outcome. The same rules on real containerd: cri-pin-owners.test.ts.
import assert from 'node:assert/strict';
import { NodeFleetPuller } from '../../src/controllers/image-prewarm/fleet-puller.js';
import { PrewarmPins, type PinRuntime } from '../../src/controllers/image-prewarm/prewarm-pins.js';
import type { ImagePrewarm } from '../../src/controllers/image-prewarm/types.js';
import type { PullEvent, PullRequest, PullService } from '../../src/pull/types.js';
import { initialFlightState } from '../../src/pull/types.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import type { Image, PinnedImage, PinOwner } from '../../src/runtime/types.js';
import { memoryLogger } from '../support/memory-logger.js';

/** Images by normalized name, each with its owners; pinned when it has an owner or was pinned by hand. */
class FakePins implements PinRuntime {
  readonly images = new Map<string, { id: string; size: number; owners: Record<string, string>; byHand: boolean }>();
  unpins: string[] = [];
  lists = 0;
  add(name: string, size: number, byHand = false): void {
    this.images.set(name, { id: `sha256:${name.length}${size}`, size, owners: {}, byHand });
  }
  inspectImage(ref: string): Promise<Image | undefined> {
    const i = this.images.get(ref);
    return Promise.resolve(i && { id: i.id, repoTags: [ref], repoDigests: [], size: i.size, pinned: i.byHand || Object.keys(i.owners).length > 0 });
  }
  pinFor(ref: string, owner: PinOwner): Promise<boolean> {
    this.images.get(ref)!.owners[owner.uid] = owner.name;
    return Promise.resolve(true);
  }
  unpinFor(ref: string, uid: string): Promise<void> {
    this.unpins.push(`${ref}:${uid}`);
    for (const i of this.images.values()) if (i.id === ref) delete i.owners[uid];
    return Promise.resolve();
  }
  pinnedImages(): Promise<PinnedImage[]> {
    this.lists++;
    const out = [...this.images].filter(([, i]) => i.byHand || Object.keys(i.owners).length > 0);
    return Promise.resolve(out.map(([name, i]) => ({ id: i.id, names: [name, i.id], size: i.size, owners: { ...i.owners }, kept: i.byHand })));
  }
}

const pw = (uid: string, images: string[], pin = true): ImagePrewarm => ({ metadata: { name: `pw-${uid}`, uid }, spec: { images, pin } });
const WEB = 'reg.example.com/web:2';
const API = 'reg.example.com/api:1';

describe('prewarm pins: a pin holds while its ImagePrewarm wants it', () => {
  it('an image two prewarms pin stays pinned until both are gone', async () => {
    const rt = new FakePins();
    rt.add(WEB, 100);
    const pins = new PrewarmPins(rt, 0, memoryLogger().logger);
    await pins.pin({ uid: 'a', name: 'pw-a' }, WEB);
    await pins.pin({ uid: 'b', name: 'pw-b' }, WEB);
    await pins.sweep([pw('a', [WEB]), pw('b', ['reg.example.com/web:2'])]);
    assert.deepEqual(rt.unpins, []);
    await pins.sweep([pw('b', [WEB])]);
    assert.deepEqual(rt.images.get(WEB)?.owners, { b: 'pw-b' }, 'a deleted: b still holds it');
    await pins.sweep([]);
    assert.deepEqual(rt.images.get(WEB)?.owners, {});
  });

  it('pin: false, or an image no longer named, lets go; a tagless name counts as :latest', async () => {
    const rt = new FakePins();
    rt.add(WEB, 100);
    rt.add('docker.io/library/busybox:latest', 5);
    const pins = new PrewarmPins(rt, 0, memoryLogger().logger);
    await pins.pin({ uid: 'a', name: 'pw-a' }, WEB);
    await pins.pin({ uid: 'a', name: 'pw-a' }, 'docker.io/library/busybox:latest');
    await pins.sweep([pw('a', [WEB, 'busybox'])]);
    assert.deepEqual(rt.unpins, []);
    await pins.sweep([pw('a', ['busybox'])]);
    assert.deepEqual(rt.images.get(WEB)?.owners, {});
    await pins.sweep([pw('a', ['busybox'], false)]);
    assert.deepEqual(rt.images.get('docker.io/library/busybox:latest')?.owners, {});
  });

  it('a sweep reads the runtime only when what the prewarms want changed, or after a pin', async () => {
    const rt = new FakePins();
    rt.add(WEB, 100);
    const pins = new PrewarmPins(rt, 0, memoryLogger().logger);
    await pins.sweep([pw('a', [WEB])]);
    await pins.sweep([pw('a', [WEB])]);
    assert.equal(rt.lists, 1);
    await pins.pin({ uid: 'a', name: 'pw-a' }, WEB);
    await pins.sweep([pw('a', [WEB])]);
    assert.equal(rt.lists, 2);
  });
});

describe('prewarm pins: the node cap (--max-pinned-bytes)', () => {
  it('refuses a pin past the cap, counting pins by hand; an image already pinned adds nothing', async () => {
    const rt = new FakePins();
    rt.add('reg.example.com/base:1', 600, true);
    rt.add(WEB, 300);
    rt.add(API, 200);
    const pins = new PrewarmPins(rt, 1000, memoryLogger().logger);
    assert.deepEqual(await pins.pin({ uid: 'a', name: 'pw-a' }, WEB), { pinned: true });
    const over = await pins.pin({ uid: 'a', name: 'pw-a' }, API);
    assert.equal(over.pinned, false);
    assert.equal(over.refused, `not pinned: ${API} (200 B) would take the images pinned on this node to 1.1 KiB, over its --max-pinned-bytes of 1000 B; it is pulled, and the kubelet's image GC may remove it`);
    assert.deepEqual(rt.images.get(API)?.owners, {});
    assert.deepEqual(await pins.pin({ uid: 'b', name: 'pw-b' }, WEB), { pinned: true });
  });

  it('the fleet puller reports a refused pin as a failure with reason PinLimitExceeded, after a pull that succeeded', async () => {
    const rt = new FakePins();
    rt.add(WEB, 300);
    const requests: PullRequest[] = [];
    const pulls = {
      pull: (req: PullRequest): Promise<PullEvent[]> => {
        requests.push(req);
        return Promise.resolve([{ ...initialFlightState('Done'), image: WEB, digest: `${WEB}@sha256:1`, elapsedMs: 1, pinned: false }]);
      },
    } as unknown as PullService;
    const puller = new NodeFleetPuller({} as Runtime, pulls, new PrewarmPins(rt, 100, memoryLogger().logger));
    const out = await puller.pull(WEB, { pin: true, owner: { uid: 'a', name: 'pw-a' } }, () => undefined);
    assert.equal(requests[0].pin, false, 'the pull service does not pin: the owned pin does');
    assert.equal(out.ok, false);
    assert.equal(out.reason, 'PinLimitExceeded');
    assert.match(out.message, /over its --max-pinned-bytes of 100 B/);
    assert.equal(out.digest, `${WEB}@sha256:1`);
  });
});
