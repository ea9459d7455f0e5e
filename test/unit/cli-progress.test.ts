// inplacectl's progress and output pieces as pure functions: every journaled step printed once and in order
// however late the views come, a watch's header and replay, a cut-short verification printed as what it was,
// what a cancel does, pull JSON without invented values, pods in RFC 3339 and by name, bar lines that fit.
import assert from 'node:assert/strict';
import type { ContainerView, OperationView } from '../../src/api/convert.js';
import { podsFromWire, pullEventView } from '../../src/api/convert.js';
import { cancelEffect } from '../../src/cli/cancel-text.js';
import { ProgressPrinter, stateText, stepText } from '../../src/cli/progress.js';
import { renderOperation, restartSummary } from '../../src/cli/render.js';
import { barLayout } from '../../src/cli/pull-command.js';
import type { ContainerStep } from '../../src/engine/operation.js';
import type { ListPodsResponse__Output } from '../../src/gen/inplace/v1/ListPodsResponse.js';
import { initialFlightState, type PullEvent, type PullPhase } from '../../src/pull/types.js';

const initialEvent = (image: string, phase: PullPhase): PullEvent => ({ ...initialFlightState(phase), image, elapsedMs: 0, pinned: false });

const T0 = Date.parse('2026-01-01T00:00:00.000Z');
const at = (ms: number) => new Date(T0 + ms).toISOString();

function container(name: string, steps: [ContainerStep, number][], over: Partial<ContainerView> = {}): ContainerView {
  return { name, oldId: 'a'.repeat(64), newId: 'b'.repeat(64), oldImage: 'app:v1', newImage: 'app:v2', step: steps[steps.length - 1][0], steps: steps.map(([step, ms]) => ({ step, at: at(ms) })), ...over };
}

function view(state: OperationView['state'], containers: ContainerView[], over: Partial<OperationView> = {}): OperationView {
  return { id: 'op-1', podId: 'c'.repeat(64), podName: 'shop/web', podIp: '', state, requested: {}, applied: { minReadyMs: 0 }, containers, pulls: [], createdAt: at(0), updatedAt: at(900), ...over };
}

const words = (lines: string[]) => lines.map((l) => l.trim().replace(/^\S+\s+/, ''));

describe('inplacectl progress', () => {
  it('prints the steps journaled between two views, each once and in order (a view may come late)', () => {
    const p = new ProgressPrinter();
    p.next(view('Pending', [container('logger', [['Waiting', 0]])]));
    // The next view already holds three more steps: the ones in between are printed from the history.
    const later = p.next(view('Recreating', [container('logger', [['Waiting', 0], ['Creating', 10], ['Created', 20], ['Stopping', 30]])]));
    assert.deepEqual(words(later), ['recreating', 'logger: creating', `logger: created bbbbbbbbbbbb (app:v2)`, 'logger: stopping the old container']);
    const again = p.next(view('Recreating', [container('logger', [['Waiting', 0], ['Creating', 10], ['Created', 20], ['Stopping', 30]])]));
    assert.deepEqual(again, [], 'nothing twice');
  });

  it('times never run backwards: a state is printed no later than the first step it holds, an end at its finish', () => {
    // As seen on containerd 1.6: the view that first says Recreating was written after the Creating step (22 ms),
    // when Created was journaled (44 ms); the record's updatedAt is that last write, not when the state began.
    const p = new ProgressPrinter();
    p.next(view('Pending', [container('logger', [['Waiting', 0]])], { updatedAt: at(0) }));
    const lines = p.next(view('Recreating', [container('logger', [['Waiting', 0], ['Creating', 22], ['Created', 44]])], { updatedAt: at(44) }));
    const ends = p.next(
      view('Succeeded', [container('logger', [['Waiting', 0], ['Creating', 22], ['Created', 44], ['Verified', 262]])], { updatedAt: at(300), finishedAt: at(262) }),
    );
    const times = [...lines, ...ends].map((l) => l.trim().split(/\s+/)[0]);
    assert.deepEqual(times, ['22ms', '22ms', '44ms', '262ms', '262ms'], [...lines, ...ends].join('\n'));
  });

  it('merges the steps of several containers by time, and prints an end after the steps that led to it', () => {
    const p = new ProgressPrinter();
    const lines = p.next(
      view('Succeeded', [
        container('a', [['Waiting', 0], ['Creating', 10], ['Done', 40]]),
        container('b', [['Waiting', 0], ['Creating', 50], ['Done', 80]]),
      ]),
    );
    assert.deepEqual(words(lines), ['a: creating', 'a: done', 'b: creating', 'b: done', 'succeeded']);
  });

  it('gives a watch that joins mid-way a header, and replays from the start', () => {
    const mid = view('Verifying', [container('app', [['Waiting', 0], ['Creating', 10], ['Created', 20], ['Stopping', 30], ['Stopped', 40], ['Starting', 50], ['Started', 60], ['Verifying', 70]])], { applied: { minReadyMs: 5000 } });
    assert.match(ProgressPrinter.joinHeader(mid) ?? '', /^operation op-1 on pod shop\/web, verifying when this watch joined; what happened before is replayed/);
    assert.equal(ProgressPrinter.joinHeader(view('Pending', [container('app', [['Waiting', 0]])])), undefined, 'nothing to replay');
    const lines = new ProgressPrinter().next(mid);
    assert.deepEqual(words(lines).map((w) => w.replace(/ \(.*/, '').replace(/ b+$/, '')), [
      'app: creating',
      'app: created',
      'app: stopping the old container',
      'app: old container stopped',
      'app: starting',
      'app: started',
      'app: verifying',
    ]);
    assert.match(lines[6], /verifying \(must keep running 5\.0s\)/);
  });

  it('says a verification was cut short by a cancel instead of "verified"', () => {
    const steps: [ContainerStep, number][] = [['Waiting', 0], ['Verifying', 1000], ['Verified', 6000]];
    const cut = new ProgressPrinter().next(view('Cancelled', [container('app', steps)], { cancelRequested: true, applied: { minReadyMs: 30_000 } }));
    assert.match(cut.join('\n'), /app: verification cut short by the cancel after 5\.0s of the 30\.0s min-ready; the running replacement is kept/);
    const full = new ProgressPrinter().next(view('Succeeded', [container('app', [['Waiting', 0], ['Verifying', 1000], ['Verified', 31_000]])], { cancelRequested: true, applied: { minReadyMs: 30_000 } }));
    assert.match(full.join('\n'), /app: verified$/m, 'a full wait is verified, cancel or not');
  });

  it('prints phases as words, never run together', () => {
    for (const s of ['RemovingOld', 'RolledBack', 'RollingBack', 'PreStop'] as ContainerStep[]) assert.match(stepText(s), /^[a-z]+( [a-zA-Z]+)+$/, s);
    assert.equal(stateText('RolledBack'), 'rolled back');
    const text = renderOperation(view('RolledBack', [container('app', [['Waiting', 0], ['RolledBack', 10]])]));
    assert.match(text, /state: {3}rolled back/);
    assert.match(text, /container app: rolled back/);
    assert.equal(text.match(/^ {2}pod:/gm)?.length, 1, 'one pod: line');
  });

  it('says the reason once in a failure', () => {
    const failed = view('Failed', [container('app', [['Waiting', 0]])], { reason: 'DeadlineExceeded', error: 'DeadlineExceeded: replacement for "app" was not verified in time' });
    assert.equal(restartSummary(failed), 'operation op-1 Failed [DeadlineExceeded]: replacement for "app" was not verified in time');
  });

  it('says what a cancel does where the operation is', () => {
    assert.match(cancelEffect(view('Pending', [container('app', [['Waiting', 0]])])), /before anything is touched/);
    assert.match(cancelEffect(view('Pulling', [container('app', [['Waiting', 0]])])), /nothing is stopped/);
    assert.match(cancelEffect(view('Recreating', [container('app', [['Waiting', 0], ['Created', 1]])])), /replacement of app is removed and its old container keeps running/);
    assert.match(cancelEffect(view('Verifying', [container('a', [['Done', 1]]), container('b', [['Verifying', 2]])])), /replacement of b is kept .*; a stays replaced/);
  });
});

describe('inplacectl -o json values', () => {
  it('a pull event leaves out what the agent did not know', () => {
    const queued = pullEventView({ ...initialEvent('r/x:1', 'Queued'), queuePosition: 2 }, false);
    assert.deepEqual(queued, { image: 'r/x:1', phase: 'Queued', queuePosition: 2, elapsedMs: 0 });
    const present = pullEventView({ ...initialEvent('r/x:1', 'Done'), alreadyPresent: true, digest: 'r/x@sha256:' + 'a'.repeat(64), attempt: 1 }, false);
    assert.deepEqual(Object.keys(present).sort(), ['alreadyPresent', 'attempt', 'bytesDone', 'digest', 'elapsedMs', 'image', 'phase']);
    assert.equal(pullEventView({ ...initialEvent('r/x:1', 'Done'), pinned: false }, true).pinned, false, 'pinned is said when pinning was asked');
    // containerd 1.6 lists a blob it has not sized yet with total 0: unknown, so left out (current is known).
    const sized = { id: 'sha256:' + 'b'.repeat(64), status: 'downloading', current: 10, total: 100 };
    const unsized = { id: 'sha256:' + 'c'.repeat(64), status: 'downloading', current: 0, total: 0 };
    const layers = pullEventView({ ...initialEvent('r/x:1', 'Pulling'), layers: [sized, unsized] }, false).layers;
    assert.deepEqual(layers, [sized, { id: unsized.id, status: 'downloading', current: 0 }]);
  });

  it('pods carry RFC 3339 times, containers by name, and an exit code only once exited', () => {
    const wire = {
      runtime: 'cri',
      pods: [
        {
          id: 'p', name: 'ns/p', namespace: 'ns', uid: 'u', state: 'ready', ip: '', attempt: 0, createdAtUnixMs: String(T0),
          containers: [
            { id: '2', name: 'zeta', image: 'i', imageId: 'x', state: 'running', attempt: 0, createdAtUnixMs: String(T0), startedAtUnixMs: String(T0 + 5) },
            { id: '1', name: 'alpha', image: 'i', imageId: 'x', state: 'exited', attempt: 0, createdAtUnixMs: String(T0), startedAtUnixMs: '0', exitCode: 0 },
          ],
        },
      ],
    } as unknown as ListPodsResponse__Output;
    const v = podsFromWire(wire);
    assert.deepEqual(v.pods[0].containers.map((c) => c.name), ['alpha', 'zeta']);
    assert.equal(v.pods[0].createdAt, '2026-01-01T00:00:00.000Z');
    assert.ok(!('ip' in v.pods[0]), 'no empty IP');
    assert.equal(v.pods[0].containers[0].exitCode, 0, 'an exited container keeps its 0');
    assert.ok(!('startedAt' in v.pods[0].containers[0]), 'never started: no start time');
    assert.ok(!('exitCode' in v.pods[0].containers[1]), 'running: no exit code');
    assert.equal(v.pods[0].containers[1].startedAt, '2026-01-01T00:00:00.005Z');
  });

  it('a progress bar line fits the terminal, so a failure kind at its end is not cut', () => {
    for (const columns of [60, 80, 120, 200]) {
      for (const image of [10, 40, 90]) {
        const { imageWidth, barsize } = barLayout(columns, image);
        const line = imageWidth + 2 + barsize + 2 + 10 + 1 + 21;
        assert.ok(line < columns || columns < 60, `${columns} columns, image ${image}: line of ${line}`);
        assert.ok(imageWidth >= 8);
      }
    }
  });
});
