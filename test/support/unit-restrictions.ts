// The shipped systemd unit read as data, and a wrapper command that applies its file system and privilege
// restrictions to a process without systemd (this machine's PID 1 is not systemd): a private mount namespace
// in which every mount but the API file systems and the writable paths is read-only (ProtectSystem=strict
// with ReadWritePaths), then setpriv with the unit's capability bounding set and no_new_privs.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

/** The shipped unit file. */
export const UNIT_FILE = path.join(root, 'systemd/inplace-agent.service');

/** The unit's settings: each key's values in file order (a key may repeat), comments and sections left out. */
export function unitSettings(text: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('#') || line.startsWith(';') || line.startsWith('[')) continue;
    const eq = line.indexOf('=');
    if (eq < 0) continue;
    const key = line.slice(0, eq);
    out.set(key, [...(out.get(key) ?? []), line.slice(eq + 1)]);
  }
  return out;
}

/** Sets up the mount namespace ($1.. up to "--" are the writable paths), checks it, then runs the rest. */
const READ_ONLY_SCRIPT = `
set -eu
rw=""
while [ "$1" != "--" ]; do mount --bind "$1" "$1"; rw="$rw $1"; shift; done
shift
# Skipped: the API file systems, the writable paths, namespace files (nsfs) and mount points that no longer
# exist (containers of the shared sandbox come and go while this runs).
skip() { case "$1" in /dev|/dev/*|/proc|/proc/*|/sys|/sys/*) return 0 ;; esac; [ "$2" = nsfs ] && return 0; [ -e "$1" ] || return 0; for d in $rw; do [ "$1" = "$d" ] && return 0; done; return 1; }
mounts() { awk '{ for (i = 7; $i != "-"; i++); print $5, substr($6, 1, 2), $(i + 1) }' /proc/self/mountinfo; }
mounts | while read -r m mode fs; do skip "$m" "$fs" || mount -o remount,bind,ro "$m" 2>/dev/null || true; done
left=$(mounts | while read -r m mode fs; do skip "$m" "$fs" || [ "$mode" = ro ] || echo "$m"; done)
[ -z "$left" ] || { echo "unit-restrictions: still writable: $left" >&2; exit 97; }
exec "$@"
`;

/** setpriv's capability names for the unit's CapabilityBoundingSet (CAP_CHOWN -> chown). */
function capabilities(set: string): string {
  const caps = set.split(/\s+/).filter(Boolean).map((c) => c.replace(/^CAP_/, '').toLowerCase());
  return ['-all', ...caps.map((c) => `+${c}`)].join(',');
}

/**
 * The command prefix that runs a process as the unit would restrict it, with writable standing in for the
 * unit's ReadWritePaths (a test cannot use /var/lib/inplace-agent and /run/inplace-agent).
 */
export function unitRestrictionsPrefix(unit: Map<string, string[]>, writable: string[]): string[] {
  const one = (k: string) => {
    const v = unit.get(k);
    if (!v || v.length !== 1) throw new Error(`the unit should set ${k} once (found ${JSON.stringify(v)})`);
    return v[0];
  };
  if (one('ProtectSystem') !== 'strict') throw new Error(`ProtectSystem=${one('ProtectSystem')}: only strict is emulated`);
  const priv = ['setpriv', '--bounding-set', capabilities(one('CapabilityBoundingSet')), '--inh-caps', '-all'];
  if (one('NoNewPrivileges') === 'yes') priv.push('--no-new-privs');
  return ['unshare', '--mount', '--propagation', 'private', 'sh', '-c', READ_ONLY_SCRIPT, 'sh', ...writable, '--', ...priv];
}

/** Whether the unit file exists (it is part of the package). */
export function unitText(): string {
  return fs.readFileSync(UNIT_FILE, 'utf8');
}
