// This agent's identity: a random id kept in its state directory, so it survives restarts and tells this agent
// apart from any other agent on the same node (a second one, or a test's).
import { randomUUID } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';

/** The id in <stateDir>/agent-id, created (atomically) on first use. */
export async function agentIdentity(stateDir: string): Promise<string> {
  const file = path.join(stateDir, 'agent-id');
  try {
    const id = (await fs.readFile(file, 'utf8')).trim();
    if (id) return id;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  await fs.mkdir(stateDir, { recursive: true, mode: 0o700 });
  const id = randomUUID();
  const tmp = `${file}.tmp-${process.pid}`;
  await fs.writeFile(tmp, id + '\n', { mode: 0o600 });
  await fs.rename(tmp, file);
  return id;
}
