import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { readAuthFileForRequest, runPull } from '../../src/cli/pull-command.js';
import { AgentError } from '../../src/errors.js';
import type { PullEvent } from '../../src/pull/types.js';

class Sink extends Writable {
  text = '';
  override _write(chunk: Buffer, _enc: string, cb: () => void) {
    this.text += chunk.toString();
    cb();
  }
}

const ev = (image: string, phase: PullEvent['phase'], extra: Partial<PullEvent> = {}): PullEvent => ({
  image,
  phase,
  queuePosition: 0,
  bytesDone: 0,
  bytesTotal: 0,
  layers: [],
  digest: '',
  imageId: '',
  error: '',
  errorKind: '',
  attempt: 1,
  elapsedMs: 0,
  pinned: false,
  alreadyPresent: false,
  ...extra,
});

async function* stream(events: PullEvent[], failWith?: Error): AsyncGenerator<PullEvent> {
  for (const e of events) yield e;
  if (failWith) throw failWith;
}

describe('inplacectl pull rendering', () => {
  it('prints a plain line for every change of queue position', async () => {
    const out = new Sink();
    const code = await runPull(
      stream([
        ev('a:1', 'Queued', { queuePosition: 3 }),
        ev('a:1', 'Queued', { queuePosition: 3 }),
        ev('a:1', 'Queued', { queuePosition: 2 }),
        ev('a:1', 'Queued', { queuePosition: 1 }),
        ev('a:1', 'Done'),
      ]),
      { out, err: new Sink(), now: () => 0 },
    );
    assert.equal(code, 0);
    assert.deepEqual(
      out.text.trim().split('\n').filter((l) => l.includes('Queued')),
      ['a:1: Queued (position 3)', 'a:1: Queued (position 2)', 'a:1: Queued (position 1)'],
    );
  });

  it('prints one plain line per phase change and bytes at most once a second, exit 0 when all Done', async () => {
    const out = new Sink();
    const err = new Sink();
    let t = 0;
    const code = await runPull(
      stream([
        ev('a:1', 'Queued', { queuePosition: 1 }),
        ev('a:1', 'Pulling', { bytesDone: 1, bytesTotal: 100 }),
        ev('a:1', 'Pulling', { bytesDone: 2, bytesTotal: 100 }),
        ev('a:1', 'Pulling', { bytesDone: 50, bytesTotal: 100 }),
        ev('a:1', 'Done', { bytesDone: 100, bytesTotal: 100, digest: 'a@sha256:x', pinned: true }),
      ]),
      { out, err, now: () => (t += 600) },
    );
    assert.equal(code, 0);
    const lines = out.text.trim().split('\n');
    assert.equal(lines[0], 'a:1: Queued (position 1)');
    assert.match(lines[1], /^a:1: Pulling 1 B \/ 100 B \(1%\)/);
    assert.equal(lines.filter((l) => l.includes('Pulling')).length, 2, 'byte lines throttled');
    assert.match(lines.at(-1) as string, /^a:1: Done, pulled 100 B in .*, a@sha256:x, pinned$/);
    assert.equal(err.text, '');
  });

  it('exits 1 and prints the error when an image fails or the stream breaks', async () => {
    const out = new Sink();
    const err = new Sink();
    const code = await runPull(
      () =>
        stream([
          ev('a:1', 'Done'),
          ev('b:1', 'Failed', { error: 'pull of b:1: the registry requires credentials and none were given for it', errorKind: 'Unauthenticated' }),
        ]),
      { out, err },
    );
    assert.equal(code, 1);
    assert.match(err.text, /b:1: Failed \[Unauthenticated\]: pull of b:1: the registry requires credentials/);
    assert.match(err.text, /1 of 2 image\(s\) done, 1 failed/);
    const err2 = new Sink();
    const code2 = await runPull(stream([ev('a:1', 'Pulling')], new AgentError('Unavailable', 'agent at /run/x.sock is not reachable')), { out: new Sink(), err: err2 });
    assert.equal(code2, 1);
    assert.match(err2.text, /inplacectl: pull: agent at \/run\/x.sock is not reachable/);
  });

  it('draws bars on a terminal and prints each outcome under them', async () => {
    const out = new Sink();
    const err = new Sink();
    const code = await runPull(stream([ev('a:1', 'Pulling', { bytesDone: 5, bytesTotal: 10 }), ev('a:1', 'Done', { bytesDone: 10, bytesTotal: 10 })]), { out, err, tty: true });
    assert.equal(code, 0);
    assert.match(out.text, /a:1: Done/);
  });

  it('writes JSON lines with --output json', async () => {
    const out = new Sink();
    const code = await runPull(stream([ev('a:1', 'Done')]), { out, err: new Sink(), json: true });
    assert.equal(code, 0);
    assert.equal(JSON.parse(out.text.trim()).phase, 'Done');
  });

  it('checks an auth file before sending it', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'pullcmd-'));
    const good = path.join(dir, 'good.json');
    writeFileSync(good, JSON.stringify({ auths: { '127.0.0.1:5001': { auth: Buffer.from('u:p').toString('base64') } } }));
    assert.match(await readAuthFileForRequest(good), /auths/);
    const empty = path.join(dir, 'empty.json');
    writeFileSync(empty, '{"auths":{}}');
    await assert.rejects(readAuthFileForRequest(empty), /has no credentials/);
  });
});

describe('inplacectl pull --pin in text mode', () => {
  it('says of each image whether it ended pinned', async () => {
    const out = new Sink();
    const code = await runPull(stream([ev('a:1', 'Done', { pinned: true }), ev('b:1', 'Done', { pinned: false })]), { out, err: new Sink(), now: () => 0, pin: true });
    assert.equal(code, 0);
    assert.match(out.text, /^a:1: Done, .*, pinned$/m);
    assert.match(out.text, /^b:1: Done, .*, not pinned \(the runtime does not report it pinned\)$/m);
  });

  it('says nothing about pinning when it was not asked for', async () => {
    const out = new Sink();
    await runPull(stream([ev('a:1', 'Done')]), { out, err: new Sink(), now: () => 0 });
    assert.doesNotMatch(out.text, /pinned/);
  });
});
