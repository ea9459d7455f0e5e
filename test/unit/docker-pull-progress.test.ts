import assert from 'node:assert/strict';
import { AgentError } from '../../src/errors.js';
import { PullTracker, pullStreamError, type DockerPullMessage } from '../../src/runtime/docker/pull-progress.js';

const REF = '127.0.0.1:5000/inplace/app:v2';

/** A pull of two layers as dockerd 20.10 streams it: one already present, one downloaded and extracted. */
const stream: DockerPullMessage[] = [
  { status: 'Pulling from inplace/app', id: 'v2' },
  { status: 'Already exists', progressDetail: {}, id: 'a3ed95caeb02' },
  { status: 'Pulling fs layer', progressDetail: {}, id: '5e1b8d0f2c11' },
  { status: 'Downloading', progressDetail: { current: 32768, total: 1049088 }, id: '5e1b8d0f2c11' },
  { status: 'Downloading', progressDetail: { current: 1049088, total: 1049088 }, id: '5e1b8d0f2c11' },
  { status: 'Verifying Checksum', progressDetail: {}, id: '5e1b8d0f2c11' },
  { status: 'Download complete', progressDetail: {}, id: '5e1b8d0f2c11' },
  { status: 'Extracting', progressDetail: { current: 65536, total: 1049088 }, id: '5e1b8d0f2c11' },
  { status: 'Pull complete', progressDetail: {}, id: '5e1b8d0f2c11' },
  { status: 'Digest: sha256:0be86ce46988f77325f2ead82b0f7bafc34108a1d81a4d981d639300d4c57d8d' },
  { status: `Status: Downloaded newer image for ${REF}` },
];

describe('Docker pull progress', () => {
  it('tracks layers, bytes and extraction over a whole pull', () => {
    const t = new PullTracker();
    const snapshots = stream.flatMap((m) => (t.apply(m, REF) ? [t.snapshot()] : []));
    assert.equal(snapshots.length, 8, 'one snapshot per layer message, none for the others');
    assert.deepEqual(snapshots[2], {
      layers: [
        { id: 'a3ed95caeb02', status: 'exists', current: 0, total: 0 },
        { id: '5e1b8d0f2c11', status: 'downloading', current: 32768, total: 1049088 },
      ],
      bytesDone: 32768,
      bytesTotal: 1049088,
      extracting: false,
    });
    const extracting = snapshots[6]!;
    assert.equal(extracting.extracting, true);
    assert.equal(extracting.bytesDone, 1049088, 'extraction does not move the downloaded bytes back');
    const last = snapshots[7]!;
    assert.equal(last.extracting, false);
    assert.deepEqual(last.layers[1], { id: '5e1b8d0f2c11', status: 'done', current: 1049088, total: 1049088 });
    assert.equal(t.digest, 'sha256:0be86ce46988f77325f2ead82b0f7bafc34108a1d81a4d981d639300d4c57d8d');
    assert.equal(t.finished, true);
  });

  it('knows a stream that ended before its Status line', () => {
    const t = new PullTracker();
    for (const m of stream.slice(0, 5)) t.apply(m, REF);
    assert.equal(t.finished, false);
  });

  it('turns errors inside the stream into kinds, naming the image', () => {
    const t = new PullTracker();
    const cases: [DockerPullMessage, string][] = [
      [{ error: 'manifest for r/x:1 not found: manifest unknown: manifest unknown', errorDetail: { message: 'manifest for r/x:1 not found: manifest unknown: manifest unknown' } }, 'NotFound'],
      [{ errorDetail: { message: 'unauthorized: authentication required' } }, 'Unauthenticated'],
      [{ errorDetail: { message: 'denied: requested access to the resource is denied' } }, 'Unauthenticated'],
      [{ errorDetail: { code: 404, message: 'whatever' } }, 'NotFound'],
      [{ errorDetail: { message: 'unexpected EOF' } }, 'Internal'],
    ];
    for (const [msg, kind] of cases) {
      assert.throws(
        () => t.apply(msg, REF),
        (e: unknown) => AgentError.is(e) && e.kind === kind && e.message.includes(`image "${REF}"`),
        JSON.stringify(msg),
      );
    }
    assert.match(pullStreamError({ error: 'boom' }, REF).message, /pull of image ".*" failed: boom/);
  });
});
