// The image filesystem of a dockerd: its root dir's free space, and what its images take (podman-compat.ts).
import { statfsSync } from 'node:fs';
import type Dockerode from 'dockerode';
import { AgentError } from '../../errors.js';
import type { ImageFsUsage } from '../types.js';
import { imagesBytes } from './podman-compat.js';

/** The usage of the filesystem under Docker's root dir (it must be readable from here). */
export async function imageFsUsage(docker: Dockerode, fail: (err: unknown, subject: string) => AgentError): Promise<ImageFsUsage> {
  let root: string;
  let used: number;
  try {
    const info = (await docker.info()) as { DockerRootDir: string };
    root = info.DockerRootDir;
    used = imagesBytes((await docker.df()) as Parameters<typeof imagesBytes>[0]);
  } catch (err) {
    throw fail(err, 'image filesystem');
  }
  try {
    const fs = statfsSync(root);
    return { mountpoint: root, usedBytes: used, availableBytes: fs.bavail * fs.bsize };
  } catch (err) {
    throw new AgentError('FailedPrecondition', `Docker root dir "${root}" cannot be read here: ${String(err)}`, {
      cause: err,
    });
  }
}
