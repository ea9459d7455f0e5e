// One node's pull of an ImagePrewarm's images while it holds a slot (node-part.ts): progress and outcomes
// recorded in its NodePrewarm, failed attempts backed off, and the check of a finished part at refresh.
import { backoffDelay } from '../../backoff.js';
import { asAgentError } from '../../errors.js';
import { REASON_FORBIDDEN } from '../../k8s/access-review.js';
import type { AuthKeyring } from '../../pull/types.js';
import { iso, SPEC_DEFAULTS, type NodePartDeps } from './node-part-deps.js';
import { renewWhilePulling, type SlotHold } from './slot-renewal.js';
import { nodePhase, type ImagePrewarm, type NodeImageStatus, type NodePrewarmEntry } from './types.js';
import { PrewarmReasons } from './reasons.js';

/** The longest back-off between two failed attempts at an image, ms. */
const MAX_ATTEMPT_BACKOFF_MS = 300_000;

/** Pulls the images not yet warm, holding the slot; records progress and the outcome. */
export async function pullAll(d: NodePartDeps, pw: ImagePrewarm, entry: NodePrewarmEntry, hold: SlotHold, release: () => Promise<void>, signal?: AbortSignal): Promise<void> {
  const name = pw.metadata.name;
  const renewal = renewWhilePulling(d, name, hold);
  try {
    let keyring: AuthKeyring | undefined;
    try {
      keyring = await d.keyring(pw);
    } catch (err) {
      const e = asAgentError(err);
      // A creator without the rights the prewarm needs is refused for good: trying again would not change it.
      const forbidden = e.reason === REASON_FORBIDDEN;
      for (const img of entry.images) {
        if (img.phase === 'Succeeded') continue;
        if (forbidden) Object.assign(img, { phase: 'Failed', reason: REASON_FORBIDDEN, message: e.message, attempts: Math.max(1, img.attempts), completionTime: iso(d.clock.now()) });
        else fail(d, pw, entry, img, `pull secret: ${e.message}`);
      }
      await settle(d, pw, entry);
      return;
    }
    entry.retryAfter = undefined;
    for (const img of entry.images) {
      if (img.phase === 'Succeeded' || img.phase === 'Failed') continue;
      Object.assign(img, { phase: 'Pulling', startTime: iso(d.clock.now()), message: undefined, reason: undefined, attempts: img.attempts + 1 });
      entry.phase = 'Pulling';
      // Recorded once the pull has run progressEveryMs, not before it: a pull is safe to repeat, the slot is held
      // meanwhile, and a pull done sooner goes from Waiting to its outcome in one write (a rollout's pre-warm from
      // a near registry). An agent that dies within that time pulls again without the attempt counted; its own
      // restarts are backed off by the kubelet.
      let lastWrite = d.clock.now();
      let recorded: Promise<void> = Promise.resolve();
      const first = new AbortController();
      const record = () => {
        lastWrite = d.clock.now();
        recorded = d.record.put(name, entry).catch((err: unknown) => {
          d.log.debug('prewarm progress not recorded', { prewarm: name, error: asAgentError(err).message });
        });
      };
      const due = () => {
        if (d.clock.now() - lastWrite >= d.progressEveryMs) record();
      };
      void d.clock.sleep(d.progressEveryMs, first.signal).then(due, () => undefined);
      const owner = { uid: pw.metadata.uid ?? '', name };
      const outcome = await d.puller
        .pull(img.image, { keyring, pin: pw.spec.pin ?? false, owner, signal }, (done, total) => {
          img.bytesDone = done;
          img.bytesTotal = total;
          due();
        })
        .finally(() => first.abort());
      await recorded;
      if (outcome.ok) {
        Object.assign(img, { phase: 'Succeeded', digest: outcome.digest, pinned: outcome.pinned, completionTime: iso(d.clock.now()), message: undefined, reason: undefined });
        if (img.bytesTotal > 0) img.bytesDone = img.bytesTotal;
      } else if (outcome.reason) {
        // Not mended by a retry (a pin over the node's cap): Failed at once, with its own reason.
        Object.assign(img, { phase: 'Failed', digest: outcome.digest, reason: outcome.reason, message: outcome.message, completionTime: iso(d.clock.now()) });
      } else {
        fail(d, pw, entry, img, outcome.message || outcome.kind || 'pull failed');
      }
    }
    renewal.stop();
    await release(); // the next node may start while this one records its outcome
    await settle(d, pw, entry);
  } finally {
    renewal.stop();
  }
}

/** Records a failed attempt (reason ImagePullFailed): Waiting again with a back-off while attempts are left, else Failed. */
function fail(d: NodePartDeps, pw: ImagePrewarm, entry: NodePrewarmEntry, img: NodeImageStatus, message: string): void {
  const limit = pw.spec.backoffLimit ?? SPEC_DEFAULTS.backoffLimit;
  const now = d.clock.now();
  img.reason = PrewarmReasons.PullFailed;
  if (img.attempts === 0) img.attempts = 1;
  if (img.attempts > limit) {
    Object.assign(img, { phase: 'Failed', message: `${message} (after ${img.attempts} attempts)`, completionTime: iso(now) });
    return;
  }
  img.phase = 'Waiting';
  img.message = `${message} (attempt ${img.attempts} of ${limit + 1}; retrying)`;
  const delay = backoffDelay(img.attempts, { initialMs: d.backoffBaseMs, maxMs: MAX_ATTEMPT_BACKOFF_MS });
  const next = now + delay;
  if (!entry.retryAfter || Date.parse(entry.retryAfter) < next) entry.retryAfter = iso(next);
}

/** Records the entry's phase from its images (a success as checked now). */
async function settle(d: NodePartDeps, pw: ImagePrewarm, entry: NodePrewarmEntry): Promise<void> {
  entry.phase = nodePhase(entry.images);
  if (entry.phase === 'Succeeded') {
    entry.lastCheck = iso(d.clock.now());
    entry.retryAfter = undefined;
  }
  await d.record.put(pw.metadata.name, entry);
}

/** A finished part: with `refreshSeconds`, check the images are still here and pull again what is gone. */
export async function refresh(d: NodePartDeps, pw: ImagePrewarm, entry: NodePrewarmEntry): Promise<number> {
  const every = (pw.spec.refreshSeconds ?? 0) * 1000;
  if (every <= 0 || entry.phase !== 'Succeeded') return d.idleMs;
  const due = Date.parse(entry.lastCheck ?? entry.firstSeen) + every - d.clock.now();
  if (due > 0) return due;
  const gone: NodeImageStatus[] = [];
  for (const img of entry.images) if (!(await d.puller.present(img.image))) gone.push(img);
  entry.lastCheck = iso(d.clock.now());
  if (gone.length > 0) {
    d.log.info('prewarmed images gone from the node; pulling them again', { prewarm: pw.metadata.name, images: gone.map((g) => g.image) });
    for (const img of gone) Object.assign(img, { phase: 'Waiting', bytesDone: 0, attempts: 0, message: 'gone from the node at refresh', completionTime: undefined });
    entry.phase = 'Waiting';
    await d.record.put(pw.metadata.name, entry);
    return 0;
  }
  await d.record.put(pw.metadata.name, entry);
  return every;
}
