// The operation journal: one JSON file per operation under <state-dir>/operations, written atomically
// (temp file, fsync, rename, fsync of the directory) so that a record on disk is always whole.
import fsSync from 'node:fs';
import fs from 'node:fs/promises';
import { promisify } from 'node:util';
import path from 'node:path';
import { AgentError } from '../errors.js';
import type { Operation } from './operation.js';
import { parseOperationRecord } from './operation-schema.js';

const fsync = promisify(fsSync.fsync);

/** The error for a failed journal write: it says what is wrong with the state directory when it can. */
function journalError(dir: string, err: NodeJS.ErrnoException): AgentError {
  const base = `cannot write the operation journal in ${dir}`;
  switch (err.code) {
    case 'ENOSPC':
    case 'EDQUOT':
      return new AgentError('ResourceExhausted', `${base}: the state directory's filesystem is full (${err.message}); free space there`, { cause: err });
    case 'EROFS':
      return new AgentError('FailedPrecondition', `${base}: the state directory is on a read-only filesystem (${err.message})`, { cause: err });
    case 'EACCES':
    case 'EPERM':
      return new AgentError('FailedPrecondition', `${base}: permission denied (${err.message})`, { cause: err });
    default:
      return new AgentError('Internal', `${base}: ${err.message}`, { cause: err });
  }
}

/** Durable storage of operation records. */
export class Journal {
  private readonly dir: string;
  /** Per record: its last write (done or failed), and the directory fsync that write left running, if any. */
  private readonly chains = new Map<string, { written: Promise<void>; synced: Promise<void> }>();

  constructor(stateDir: string) {
    this.dir = path.join(stateDir, 'operations');
  }

  /** Creates the journal directory. */
  async open(): Promise<void> {
    await fs.mkdir(this.dir, { recursive: true, mode: 0o700 });
  }

  /**
   * Replaces a record atomically (temp file fsynced, rename): a reader sees the old record or the new one,
   * whole. With sync true (the default) the directory is fsynced too, so the new record survives a power loss;
   * with false, a power loss may bring back the previous record. With 'after', the call resolves once the
   * record is in place (as with false) and the directory fsync goes on behind it: the next write of the same
   * record waits for it (and fails if it failed), so whatever that next write announces still comes after a
   * record that survives a power loss.
   */
  write(op: Operation, sync: boolean | 'after' = true): Promise<void> {
    // Writes of one record go one after another, so an older state can never land after a newer one. A
    // directory fsync still running from an earlier 'after' write runs beside this write's own file write and
    // fsync (it covers the earlier rename, made before this write began), and this call resolves only once both
    // are done: what this write announces still comes after a record that survives a power loss, without the
    // two fsyncs one after the other.
    const prev = this.chains.get(op.id) ?? { written: Promise.resolve(), synced: Promise.resolve() };
    const wrap = (err: unknown) => {
      throw err instanceof AgentError ? err : journalError(this.dir, err as NodeJS.ErrnoException);
    };
    const written = prev.written.then(() => this.writeNow(op, sync === true)).catch(wrap);
    const next = Promise.all([written, prev.synced]).then(() => undefined);
    // A failed write is the caller's to see; only a directory fsync not done when the call returned is handed on
    // to the next write (which fails if it failed). One that no sync covers is still waited for by the write after
    // that, but its failure is told once.
    const synced = sync === 'after' ? written.then(() => this.syncDir().catch(wrap), () => undefined) : sync === true ? Promise.resolve() : prev.synced.catch(() => undefined);
    const entry = { written: written.catch(() => undefined), synced };
    this.chains.set(op.id, entry);
    const forget = () => {
      if (this.chains.get(op.id) === entry) this.chains.delete(op.id);
    };
    void Promise.all([entry.written, synced]).then(forget, forget);
    return next;
  }

  /**
   * Writes the record through a temp file. Only the fsyncs wait for the disk, and only they leave the event loop:
   * opening, writing and renaming a small file are page-cache work, done in place, where five asynchronous calls
   * (open, write, sync, close, rename) each waited for a turn of a busy event loop (19.5 ms for a record on a
   * loaded node against 0.4-0.8 ms of file work; docs/restart.md).
   */
  private async writeNow(op: Operation, sync: boolean): Promise<void> {
    const file = path.join(this.dir, `${op.id}.json`);
    const tmp = `${file}.tmp-${process.pid}`;
    try {
      const fd = fsSync.openSync(tmp, 'w', 0o600);
      try {
        fsSync.writeFileSync(fd, JSON.stringify(op));
        // The file's content is always on disk before the rename, so a rename that survives a power loss
        // never points at an empty file; only the directory fsync (the rename's own durability) is optional.
        await fsync(fd);
      } finally {
        fsSync.closeSync(fd);
      }
      fsSync.renameSync(tmp, file);
    } catch (err) {
      // A full disk leaves a partial temp file: it must not take the space the next write needs.
      await fs.rm(tmp, { force: true }).catch(() => undefined);
      throw err;
    }
    if (sync) await this.syncDir();
  }

  /** fsyncs the journal's directory: the renames into it survive a power loss. */
  private async syncDir(): Promise<void> {
    const dh = fsSync.openSync(this.dir, 'r');
    try {
      await fsync(dh);
    } finally {
      fsSync.closeSync(dh);
    }
  }

  /** Where records that cannot be read are set aside. */
  get corruptDir(): string {
    return path.join(this.dir, 'corrupt');
  }

  /**
   * Reads every record, oldest first. A file that is not a whole, well-formed record (bad JSON, a wrong
   * shape, a name that is not its id) is moved to corruptDir and reported with where it went (undefined when
   * even the move failed); the others are returned.
   */
  async readAll(onBad?: (file: string, err: unknown, movedTo: string | undefined) => void): Promise<Operation[]> {
    const names = (await fs.readdir(this.dir)).filter((n) => n.endsWith('.json'));
    const ops: Operation[] = [];
    for (const n of names) {
      try {
        const op = parseOperationRecord(JSON.parse(await fs.readFile(path.join(this.dir, n), 'utf8')));
        if (n !== `${op.id}.json`) throw new Error(`the record's id ${JSON.stringify(op.id)} does not match its file name`);
        ops.push(op);
      } catch (err) {
        onBad?.(n, err, await this.setAside(n).catch(() => undefined));
      }
    }
    return ops.sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id));
  }

  /** Moves a record to corruptDir (never over an earlier one); returns its new path. */
  private async setAside(name: string): Promise<string> {
    await fs.mkdir(this.corruptDir, { recursive: true, mode: 0o700 });
    let to = path.join(this.corruptDir, name);
    if (await fs.stat(to).then(() => true, () => false)) to = path.join(this.corruptDir, `${name}.${Date.now()}`);
    await fs.rename(path.join(this.dir, name), to);
    return to;
  }

  /** Deletes a record (retention). */
  async remove(id: string): Promise<void> {
    await fs.rm(path.join(this.dir, `${id}.json`), { force: true });
  }
}
