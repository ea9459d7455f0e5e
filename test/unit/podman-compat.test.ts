// Podman's Docker API answers, turned into dockerd's shapes: pure rules, each on the values a real Podman 4.3
// sent (see docker-runtime.test.ts for the same against a running one).
import assert from 'node:assert/strict';
import { containerState, eventType } from '../../src/runtime/docker/convert.js';
import { dockerStatusFor, imagesBytes, isPodman, ulimitName } from '../../src/runtime/docker/podman-compat.js';
import { podmanFinished } from '../../src/runtime/docker/pull.js';

describe('Podman compatibility rules (Docker adapter)', () => {
  it('gives back the status dockerd answers for the refusals Podman sends as 500; others unchanged', () => {
    const inUse = 'container create: creating container storage: the container name "a-next" is already in use by 80c8. You have to remove that container to be able to reuse that name: that name is already in use';
    assert.equal(dockerStatusFor(500, inUse), 409);
    assert.equal(dockerStatusFor(500, 'can only create exec sessions on running containers: container state improper'), 409);
    assert.equal(dockerStatusFor(500, 'something else broke'), 500);
    assert.equal(dockerStatusFor(404, 'no such container'), 404);
    assert.equal(dockerStatusFor(409, inUse), 409);
  });

  it('tells Podman from dockerd by the components of their version answers', () => {
    assert.equal(isPodman({ Components: [{ Name: 'Podman Engine' }] }), true);
    assert.equal(isPodman({ Components: [{ Name: 'Engine' }, { Name: 'containerd' }, { Name: 'runc' }] }), false);
    assert.equal(isPodman({}), false);
  });

  it('names inspected ulimits as create takes them', () => {
    assert.equal(ulimitName('RLIMIT_NOFILE'), 'nofile');
    assert.equal(ulimitName('RLIMIT_NPROC'), 'nproc');
    assert.equal(ulimitName('nofile'), 'nofile', "dockerd's own names pass");
  });

  it('counts image bytes: dockerd\'s LayersSize, else the images less what they share', () => {
    assert.equal(imagesBytes({ LayersSize: 1234, Images: [{ Size: 99 }] }), 1234);
    // Podman 4.3: LayersSize 0; app:v1 and app:v2 share their 2137839-byte base.
    const podman = { LayersSize: 0, Images: [{ Size: 2135711, SharedSize: 0 }, { Size: 2137839, SharedSize: 0 }, { Size: 2137839, SharedSize: 2137839 }, { Size: 3192259, SharedSize: 2137839 }] };
    assert.equal(imagesBytes(podman), 2135711 + 2137839 + 0 + (3192259 - 2137839) + 2137839);
    assert.equal(imagesBytes({}), 0);
  });

  it('takes a pull stream without a Status line as finished only on Podman\'s closing message for the stored image', () => {
    const imageId = 'sha256:08e439aba298e438c850fe2533cb4cecea0449dbeb00bf12593597a58cdd4af1';
    assert.equal(podmanFinished({ status: 'Download complete', id: '08e439aba298' }, imageId), true);
    assert.equal(podmanFinished({ status: 'Download complete', id: '7cf0c6cdb451' }, imageId), false, 'a layer, not the image');
    assert.equal(podmanFinished({ status: 'Downloading', id: '08e439aba298' }, imageId), false);
    assert.equal(podmanFinished({ status: 'Download complete', id: '08e4' }, imageId), false, 'too short to tell');
    assert.equal(podmanFinished(undefined, imageId), false, 'a cut stream');
  });

  it('reads Podman\'s remove event as deleted, and its stopped state as exited', () => {
    assert.equal(eventType('remove'), 'deleted');
    assert.equal(containerState('stopped'), 'exited');
  });
});
