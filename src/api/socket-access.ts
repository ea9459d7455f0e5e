// Why a client may not use the agent's unix socket, in terms an operator can act on.
import { readFileSync, statSync } from 'node:fs';

/** The name of a group id from a group file; undefined when it has none. */
export function groupName(gid: number, groupFile = '/etc/group'): string | undefined {
  try {
    const line = readFileSync(groupFile, 'utf8')
      .split('\n')
      .find((l) => l.split(':')[2] === String(gid));
    return line?.split(':')[0];
  } catch {
    return undefined;
  }
}

/** The message for a connect that the socket's permissions refused: the socket, its mode and its group. */
export function permissionDeniedMessage(socketPath: string, groupFile = '/etc/group'): string {
  let owner = '';
  let group = '';
  try {
    const st = statSync(socketPath);
    const name = groupName(st.gid, groupFile);
    group = name ?? String(st.gid);
    owner = ` (mode ${(st.mode & 0o777).toString(8).padStart(4, '0')}, group "${group}"${name ? ` gid ${st.gid}` : ''})`;
  } catch {
    // The directory itself may be unreadable: say what is known.
  }
  const join = group ? `run as a member of group "${group}" (the agent's --socket-group), or as root` : 'run as a member of the agent\'s --socket-group, or as root';
  return `permission denied on the agent socket ${socketPath}${owner}: ${join}`;
}
