// Runs a command in a running container: exec create, start hijacked, demux stdout/stderr, read the exit code.
import { PassThrough, type Duplex } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import type Dockerode from 'dockerode';
import { AgentError } from '../../errors.js';
import type { ExecResult } from '../types.js';
import { dockerError } from './errors.js';

/** Runs cmd in the container and waits up to timeoutSeconds (0: no limit). The process is not killed on timeout. */
export async function execInContainer(
  docker: Dockerode,
  endpoint: string,
  containerId: string,
  cmd: string[],
  timeoutSeconds: number,
): Promise<ExecResult> {
  const subject = `container "${containerId}"`;
  let exec: Dockerode.Exec;
  let stream: Duplex;
  try {
    exec = await docker.getContainer(containerId).exec({ Cmd: cmd, AttachStdout: true, AttachStderr: true });
    stream = (await exec.start({ hijack: true, stdin: false })) as Duplex;
  } catch (err) {
    throw dockerError(err, subject, endpoint);
  }

  const out: Buffer[] = [];
  const errOut: Buffer[] = [];
  const stdout = new PassThrough().on('data', (b: Buffer) => out.push(b));
  const stderr = new PassThrough().on('data', (b: Buffer) => errOut.push(b));
  docker.modem.demuxStream(stream, stdout, stderr);

  await new Promise<void>((resolve, reject) => {
    const timer =
      timeoutSeconds > 0
        ? setTimeout(() => {
            stream.destroy();
            reject(new AgentError('DeadlineExceeded', `exec "${cmd.join(' ')}" in ${subject} exceeded ${timeoutSeconds} s`));
          }, timeoutSeconds * 1000)
        : undefined;
    const done = (): void => {
      clearTimeout(timer);
      resolve();
    };
    stream.once('end', done);
    stream.once('close', done);
    stream.once('error', (err) => {
      clearTimeout(timer);
      reject(dockerError(err, subject, endpoint));
    });
  });

  // The stream can end a moment before the daemon records the exit code.
  for (let i = 0; ; i++) {
    let info: Dockerode.ExecInspectInfo;
    try {
      info = await exec.inspect();
    } catch (err) {
      throw dockerError(err, `exec in ${subject}`, endpoint);
    }
    if (!info.Running && info.ExitCode !== null) {
      return { exitCode: info.ExitCode, stdout: Buffer.concat(out).toString(), stderr: Buffer.concat(errOut).toString() };
    }
    if (i >= 100) throw new AgentError('Internal', `exec "${cmd.join(' ')}" in ${subject}: no exit code after its output ended`);
    await sleep(10);
  }
}
