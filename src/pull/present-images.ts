// Which image in the runtime's store a reference names (by tag, or by repo digest for a digest reference), and
// the looks in the store begun ahead of a pull (ImagePuller.lookAhead) that the pull then takes.
import type { Clock } from '../clock.js';
import { parseImageRef, type ImageRef } from '../image-ref.js';
import type { Runtime } from '../runtime/runtime.js';
import type { Image } from '../runtime/types.js';

/** How long a look in the store begun ahead of an ensure (lookAhead) stands for that ensure's own, ms. */
const LOOK_AHEAD_MS = 1000;

/** The image in the store that ref names: by tag, or by repo digest for a digest reference. */
export async function findPresent(runtime: Runtime, ref: ImageRef): Promise<Image | undefined> {
  const direct = await runtime.inspectImage(ref.original.trim()).catch(() => undefined);
  if (direct && (!ref.digest || hasDigest(ref, direct) || direct.repoDigests.length === 0)) return direct;
  const all = await runtime.listImages().catch(() => [] as Image[]);
  return all.find((img) => (ref.digest ? hasDigest(ref, img) : img.repoTags.some((t) => normalized(t) === ref.normalized)));
}

/** The repo digest of img for ref's repository (`name@sha256:…`), '' when the runtime lists none. */
export function repoDigestOf(ref: ImageRef, img: Image): string {
  const repo = `${ref.registry}/${ref.repository}@`;
  const mine = img.repoDigests.find((d) => normalized(d).startsWith(repo));
  if (ref.digest && mine && !normalized(mine).endsWith(ref.digest)) {
    return img.repoDigests.find((d) => d.endsWith(ref.digest as string)) ?? mine;
  }
  return mine ?? img.repoDigests[0] ?? '';
}

function hasDigest(ref: ImageRef, img: Image): boolean {
  const want = `${ref.registry}/${ref.repository}@${ref.digest}`;
  return img.repoDigests.some((d) => normalized(d) === want) || img.id === ref.digest;
}

function normalized(ref: string): string {
  try {
    return parseImageRef(ref).normalized;
  } catch {
    return ref;
  }
}

/** Looks in the store begun ahead of a pull, by trimmed reference, each standing for LOOK_AHEAD_MS. */
export class LooksAhead {
  /** By the reference as given (trimmed), with when each began (clock ms). */
  private readonly looks = new Map<string, { at: number; found: Promise<Image | undefined> }>();

  constructor(
    private readonly runtime: Runtime,
    private readonly clock: Clock,
  ) {}

  /** See ImagePuller.lookAhead: the look is taken by the next flight of ref within LOOK_AHEAD_MS. */
  begin(ref: string): void {
    let parsed: ImageRef;
    try {
      parsed = parseImageRef(ref);
    } catch {
      return; // the request is refused with its own message
    }
    const now = this.clock.now();
    // Never kept past its use: looks not taken in time are dropped.
    for (const [k, v] of this.looks) if (now - v.at > LOOK_AHEAD_MS) this.looks.delete(k);
    // A look begun for the same reference a moment ago (the request's image as it arrived, then the plan's) stands.
    if (this.looks.has(parsed.original.trim())) return;
    this.looks.set(parsed.original.trim(), { at: now, found: findPresent(this.runtime, parsed) });
  }

  /** See ImagePuller.present. */
  present(ref: string): Promise<boolean> | undefined {
    const look = this.looks.get(ref.trim());
    if (!look || this.clock.now() - look.at > LOOK_AHEAD_MS) return undefined;
    return look.found.then((i) => i !== undefined);
  }

  /** The image ref names in the store: the look begun for it no longer than LOOK_AHEAD_MS ago (taken, once), else a look now. */
  take(ref: ImageRef): Promise<Image | undefined> {
    const key = ref.original.trim();
    const look = this.looks.get(key);
    this.looks.delete(key);
    return look && this.clock.now() - look.at <= LOOK_AHEAD_MS ? look.found : findPresent(this.runtime, ref);
  }
}
