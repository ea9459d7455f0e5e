// What a failed CRI PullImage means, read from containerd's answer. containerd reports a registry's answers
// only as text inside its own (gRPC UNKNOWN or NOT_FOUND, the code alone says little: NOT_FOUND is also its
// own content store), so the kind comes from this table of the messages containerd 1.6 and 2.x really send.
// Every `seen` text was captured from the real runtime against a real registry, and
// test/integration/cri-pull-errors.test.ts provokes each case on both versions and checks that the answer
// still matches its row. A message no row matches is Unknown: retried per the pull policy, never guessed.
import type { ErrorKind } from '../../errors.js';

/** One message containerd sends for a failed pull, and what it means. */
export interface PullMessage {
  /** A stable name, used by the tests. */
  id: string;
  /** What the caller learns; decides whether a retry can help. */
  kind: ErrorKind;
  /** Matches the message (gRPC details) wherever containerd puts it in its sentence. */
  pattern: RegExp;
  /** The containerd versions that send it. */
  versions: ('1.6' | '2.x')[];
  /** The message as captured (registry address and digests as they were then). */
  seen: string;
}

/** The known messages, checked in order: the first match wins. */
export const PULL_MESSAGES: readonly PullMessage[] = [
  {
    // 2.x answers a registry's 401 to an anonymous request with this, whether or not the repository exists
    // (the registry does not say before authentication). First: it also says "does not exist".
    id: 'auth-required-2.x',
    kind: 'Unauthenticated',
    pattern: /pull access denied, repository does not exist or may require authorization/,
    versions: ['2.x'],
    seen:
      'failed to pull and unpack image "127.0.0.1:36839/cap/priv:v1": failed to resolve image: pull access denied, repository does not exist or may require authorization: authorization failed: no basic auth credentials',
  },
  {
    // 2.x with credentials the registry refuses.
    id: 'auth-rejected-2.x',
    kind: 'Unauthenticated',
    pattern: /unexpected status from [A-Z]+ request to \S+: 401 Unauthorized/,
    versions: ['2.x'],
    seen: 'failed to pull and unpack image "127.0.0.1:36839/cap/priv:v1": failed to resolve image: unexpected status from HEAD request to http://127.0.0.1:36839/v2/cap/priv/manifests/v1: 401 Unauthorized',
  },
  {
    // 1.6, with no credentials and with refused ones alike.
    id: 'auth-1.6',
    kind: 'Unauthenticated',
    pattern: /pulling from host \S+ failed with status code \[[^\]]*\]: 401 Unauthorized/,
    versions: ['1.6'],
    seen: 'failed to pull and unpack image "127.0.0.1:36839/cap/priv:v1": failed to resolve reference "127.0.0.1:36839/cap/priv:v1": pulling from host 127.0.0.1:36839 failed with status code [manifests v1]: 401 Unauthorized',
  },
  {
    // 1.6: the registry has no such tag, repository or manifest digest (its 404 to the manifest request). The
    // reference repeats, so a "not found" about anything else (containerd's content store) does not match.
    id: 'missing-1.6',
    kind: 'NotFound',
    pattern: /failed to resolve reference "([^"]+)": \1: not found/,
    versions: ['1.6'],
    seen: 'failed to pull and unpack image "127.0.0.1:38819/cap/app:nope": failed to resolve reference "127.0.0.1:38819/cap/app:nope": 127.0.0.1:38819/cap/app:nope: not found',
  },
  {
    // 2.x (its transfer service): the same.
    id: 'missing-2.x',
    kind: 'NotFound',
    pattern: /failed to resolve image: (\S+): not found/,
    versions: ['2.x'],
    seen: 'failed to pull and unpack image "127.0.0.1:38819/cap/app:nope": failed to resolve image: 127.0.0.1:38819/cap/app:nope: not found',
  },
  {
    // Both: the manifest names a layer or config the registry does not have (its 404 to the blob request).
    id: 'missing-blob',
    kind: 'NotFound',
    pattern: /could not fetch content descriptor sha256:[0-9a-f]{64} \([^)]*\) from remote: not found/,
    versions: ['1.6', '2.x'],
    seen: 'failed to pull and unpack image "127.0.0.1:33827/cap/blob:a": failed to copy: httpReadSeeker: failed open: could not fetch content descriptor sha256:2ad909c9725e984d052eca264eb0dd1a0edd5f608d6af7a372cec76cee26afbd (application/vnd.docker.image.rootfs.diff.tar.gzip) from remote: not found',
  },
  {
    // Both: nothing listens at the registry's address (1.6 tries http on loopback, 2.x https first).
    id: 'registry-refused',
    kind: 'Unavailable',
    pattern: /failed to do request: \w+ "[^"]+": dial tcp \S+: connect: connection refused/,
    versions: ['1.6', '2.x'],
    seen: 'failed to pull and unpack image "127.0.0.1:1/cap/app:v1": failed to resolve image: failed to do request: Head "https://127.0.0.1:1/v2/cap/app/manifests/v1": dial tcp 127.0.0.1:1: connect: connection refused',
  },
  {
    // Both: a reference CRI cannot parse (the pull service refuses those before calling).
    id: 'bad-reference',
    kind: 'InvalidArgument',
    pattern: /failed to parse image reference "[^"]*": invalid reference format/,
    versions: ['1.6', '2.x'],
    seen: 'failed to parse image reference "Not A Ref": invalid reference format: repository name must be lowercase',
  },
  {
    // Both: the kernel's ENOSPC/EDQUOT text, from writing the content store or a snapshot (not provoked here).
    id: 'disk-full',
    kind: 'ResourceExhausted',
    pattern: /no space left on device|disk quota exceeded/,
    versions: ['1.6', '2.x'],
    seen: 'failed to pull and unpack image "127.0.0.1:5000/inplace/app:v1": failed to extract layer sha256:0b1e: write /var/lib/containerd/io.containerd.snapshotter.v1.overlayfs/snapshots/12/fs/big: no space left on device: unknown',
  },
];

/** The table row that explains a failed pull's message, or undefined when none does. */
export function matchPullMessage(details: string): PullMessage | undefined {
  return PULL_MESSAGES.find((m) => m.pattern.test(details));
}
