// Usage of the image filesystem: the runtime says how much its images use; the free bytes come from statfs
// of the same mountpoint, which the agent must be able to see.
import { statfsSync } from 'node:fs';
import { AgentError } from '../../errors.js';
import type { ImageFsUsage } from '../types.js';
import type { CriClient } from './client.js';

/** Used bytes of the runtime's image filesystem and free bytes on it. */
export async function imageFsUsage(client: CriClient): Promise<ImageFsUsage> {
  const { imageFilesystems } = await client.imageFsInfo();
  const fs = imageFilesystems[0];
  const mountpoint = fs?.fsId?.mountpoint ?? '';
  if (!mountpoint) throw new AgentError('Internal', `CRI runtime at ${client.endpoint} reports no image filesystem`);
  let availableBytes: number;
  try {
    const st = statfsSync(mountpoint, { bigint: true });
    availableBytes = Number(st.bavail * st.bsize);
  } catch (err) {
    throw new AgentError('Internal', `image filesystem "${mountpoint}": statfs failed: ${(err as Error).message}`, { cause: err });
  }
  return { mountpoint, usedBytes: Number(fs.usedBytes?.value ?? '0'), availableBytes };
}
