// Which containerd releases act on the CRI plugin's pinned image label (`io.cri-containerd.pinned=pinned`),
// read from containerd's own sources:
//   - before 1.6.22, and 1.7.0-1.7.2: the CRI plugin has no notion of it. Image.pinned is never set, so the
//     kubelet's image GC treats a labelled image like any other (containerd's own GC ignores the label too:
//     every named image is a GC root there anyway).
//   - 1.6.22-1.6.24 and 1.7.3-1.7.9: the image cache reads the label when it loads an image record (on pull,
//     on the image-create event, at start-up) but ignores later changes to a record it already holds, so a
//     label set on a present image shows in ImageStatus/ListImages only after containerd restarts.
//   - 1.6.25+, 1.7.10+ and 2.x: the image-update event that containerd publishes for a label change refreshes
//     the cache within moments; an image counts as pinned while any of its names carries the label.
// The kubelet's image GC skips exactly the images CRI reports pinned.
// Seen on this project's containerd 1.6.20: the label is stored and survives restarts, the CRI plugin logs
// the image-update event and refreshes the image, yet ImageStatus and ListImages report pinned=false, also
// after a restart. A CRI re-pull by tag replaces the tag's record whole (containerd's client does that in 1.6,
// 1.7 and 2.0), dropping the label there; the repo-digest and id records keep it, and the newer plugins count
// the image pinned while any record is.

/** How a CRI runtime treats the pinned image label: see the table above. */
export type PinnedLabelSupport = 'live' | 'on-load' | 'none' | 'unknown';

/** The support of a runtime by its CRI Version answer (runtimeName, runtimeVersion). */
export function pinnedLabelSupport(runtimeName: string, runtimeVersion: string): PinnedLabelSupport {
  if (runtimeName !== 'containerd') return 'unknown';
  // Distributions add suffixes (Debian: `1.6.20~ds1`); upstream builds may carry a leading v.
  const m = /^v?(\d+)\.(\d+)\.(\d+)/.exec(runtimeVersion.trim());
  if (!m) return 'unknown';
  const [major, minor, patch] = m.slice(1).map(Number);
  if (major !== 1) return major > 1 ? 'live' : 'none';
  if (minor < 6) return 'none';
  if (minor === 6) return patch >= 25 ? 'live' : patch >= 22 ? 'on-load' : 'none';
  if (minor === 7) return patch >= 10 ? 'live' : patch >= 3 ? 'on-load' : 'none';
  return 'live';
}
