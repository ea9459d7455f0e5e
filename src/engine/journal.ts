// The operation journal: one JSON file per operation under <state-dir>/operations, written atomically
// (temp file, fsync, rename, fsync of the directory) so that a record on disk is always whole.
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Operation } from './operation.js';

/** Durable storage of operation records. */
export class Journal {
  private readonly dir: string;

  constructor(stateDir: string) {
    this.dir = path.join(stateDir, 'operations');
  }

  /** Creates the journal directory. */
  async open(): Promise<void> {
    await fs.mkdir(this.dir, { recursive: true, mode: 0o700 });
  }

  /** Writes a record; when this resolves, the record survives a crash. */
  async write(op: Operation): Promise<void> {
    const file = path.join(this.dir, `${op.id}.json`);
    const tmp = `${file}.tmp-${process.pid}`;
    const fh = await fs.open(tmp, 'w', 0o600);
    try {
      await fh.writeFile(JSON.stringify(op, null, 1));
      await fh.sync();
    } finally {
      await fh.close();
    }
    await fs.rename(tmp, file);
    const dh = await fs.open(this.dir, 'r');
    try {
      await dh.sync();
    } finally {
      await dh.close();
    }
  }

  /** Reads every record, oldest first; unreadable files are reported and skipped. */
  async readAll(onBad?: (file: string, err: unknown) => void): Promise<Operation[]> {
    const names = (await fs.readdir(this.dir)).filter((n) => n.endsWith('.json'));
    const ops: Operation[] = [];
    for (const n of names) {
      try {
        ops.push(JSON.parse(await fs.readFile(path.join(this.dir, n), 'utf8')) as Operation);
      } catch (err) {
        onBad?.(n, err);
      }
    }
    return ops.sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id));
  }

  /** Deletes a record (retention). */
  async remove(id: string): Promise<void> {
    await fs.rm(path.join(this.dir, `${id}.json`), { force: true });
  }
}
