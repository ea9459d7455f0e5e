// `inplacectl pull`: renders the agent's PullImages event stream — progress bars on a terminal, plain lines
// otherwise (one per phase or queue position change, byte progress at most every second per image), JSON lines with --output
// json — and tells whether every image ended Done.
import { readFile } from 'node:fs/promises';
import cliProgress from 'cli-progress';
import { formatBytes } from '../bytes.js';
import { AgentError, asAgentError } from '../errors.js';
import { parseAuthConfig } from '../pull/auth.js';
import type { PullEvent } from '../pull/types.js';
import { pullEventView } from '../api/convert.js';
import { jsonError } from './json-error.js';
import { streamRecord } from './output.js';

/** How to render. */
export interface PullRenderOptions {
  /** One JSON object per event per line. */
  json?: boolean;
  /** With json: each record as a YAML document (-o yaml). */
  yaml?: boolean;
  /** Progress bars (stdout is a terminal). */
  tty?: boolean;
  out?: NodeJS.WritableStream;
  err?: NodeJS.WritableStream;
  /** The request asked for pinning: the outcome says whether each image is pinned. */
  pin?: boolean;
  /** Width of the terminal the bars are drawn on (default: stdout's columns, else 80). */
  columns?: number;
  /** Least time between two plain byte-progress lines of one image, ms (default 1000). */
  plainIntervalMs?: number;
  now?: () => number;
}

/** Events of one pull request, or a function that starts the request and returns them. */
export type PullEventSource = AsyncIterable<PullEvent> | (() => AsyncIterable<PullEvent>);

/**
 * Reads an auth file for `--auth-file`, checks that it is a Docker config.json with usable `auths`, and
 * returns its text for the request. Throws InvalidArgument naming the file (never a secret) otherwise.
 */
export async function readAuthFileForRequest(path: string): Promise<string> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    throw new AgentError('InvalidArgument', `--auth-file: cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
  const keyring = parseAuthConfig(text, `--auth-file ${path}`);
  if (keyring.size === 0) throw new AgentError('InvalidArgument', `--auth-file ${path} has no credentials under "auths"`);
  return text;
}


const seconds = (ms: number) => `${(ms / 1000).toFixed(1)}s`;

/** The one-line description of an event, as the plain renderer prints it; pin: the request asked for pinning. */
export function describePullEvent(e: PullEvent, pin = false): string {
  switch (e.phase) {
    case 'Queued':
      return `${e.image}: Queued${e.queuePosition ? ` (position ${e.queuePosition})` : ''}`;
    case 'Pulling':
    case 'Extracting': {
      const bytes = e.bytesTotal > 0 ? ` ${formatBytes(e.bytesDone)} / ${formatBytes(e.bytesTotal)} (${Math.floor((100 * e.bytesDone) / e.bytesTotal)}%)` : e.bytesDone > 0 ? ` ${formatBytes(e.bytesDone)}` : '';
      return `${e.image}: ${e.phase}${e.attempt > 1 ? ` (attempt ${e.attempt})` : ''}${bytes}, ${seconds(e.elapsedMs)}`;
    }
    case 'Retrying':
      return `${e.image}: Retrying after attempt ${e.attempt}: ${e.error}`;
    case 'Done': {
      const what = e.alreadyPresent ? 'already present' : `pulled${e.bytesTotal > 0 ? ` ${formatBytes(e.bytesTotal)}` : ''} in ${seconds(e.elapsedMs)}`;
      const pinned = e.pinned ? ', pinned' : pin ? ', not pinned (the runtime does not report it pinned)' : '';
      return `${e.image}: Done, ${what}${e.digest ? `, ${e.digest}` : ''}${pinned}`;
    }
    case 'Failed':
      return `${e.image}: Failed${e.errorKind ? ` [${e.errorKind}]` : ''}: ${e.error || 'unknown error'}`;
    default:
      return `${e.image}: ${String(e.phase)}`;
  }
}

/** Columns of a bar line other than the image name and the bar: ` |`, `| `, the phase (10), a space, the bytes or error kind (21). */
const BAR_FIXED_COLUMNS = 4 + 10 + 1 + 21;

/**
 * The widths of the image name and of the bar such that a whole bar line fits in columns (a line that does
 * not fit is cut by the progress library, and an error kind at its end with it).
 */
export function barLayout(columns: number, longestImage: number): { imageWidth: number; barsize: number } {
  const room = Math.max(0, columns - 1 - BAR_FIXED_COLUMNS);
  const imageWidth = Math.max(8, Math.min(40, longestImage, room - 10));
  const barsize = Math.max(0, Math.min(30, room - imageWidth));
  return { imageWidth, barsize };
}

/** An image name cut (from the left, keeping the tag) or padded to width. */
function fitImage(image: string, width: number): string {
  return image.length > width ? '…' + image.slice(-(width - 1)) : image.padEnd(width);
}

/** Draws one progress bar per image on a terminal; each bar keeps the layout it was made with. */
function barRenderer(out: NodeJS.WritableStream, columns: number): { show: (e: PullEvent) => void; stop: () => void } {
  let layout = barLayout(columns, 0);
  const barOf = new Map<string, cliProgress.SingleBar>();
  const widthOf = new Map<string, number>();
  const bars = new cliProgress.MultiBar(
    {
      format: '{image} |{bar}| {phase} {bytes}',
      hideCursor: true,
      clearOnComplete: false,
      stopOnComplete: false,
      barsize: layout.barsize,
      autopadding: true,
      stream: out as NodeJS.WriteStream,
    },
    cliProgress.Presets.shades_classic,
  );
  const show = (e: PullEvent) => {
    let bar = barOf.get(e.image);
    const total = e.bytesTotal > 0 ? e.bytesTotal : 1;
    const value = e.phase === 'Done' ? total : Math.min(e.bytesDone, total);
    const phase = e.phase === 'Queued' && e.queuePosition ? `Queued #${e.queuePosition}` : e.phase === 'Done' && e.alreadyPresent ? 'Present' : e.phase;
    // Each bar keeps the layout it was made with, so that none of its lines outgrows the terminal.
    if (!bar) layout = barLayout(columns, Math.max(e.image.length, ...[...barOf.keys()].map((k) => k.length)));
    const imageWidth = bar ? (widthOf.get(e.image) ?? layout.imageWidth) : layout.imageWidth;
    widthOf.set(e.image, imageWidth);
    const payload = {
      image: fitImage(e.image, imageWidth),
      phase: phase.padEnd(10),
      bytes: e.bytesTotal > 0 ? `${formatBytes(e.bytesDone)}/${formatBytes(e.bytesTotal)}` : e.phase === 'Failed' ? e.errorKind : '',
    };
    if (!bar) {
      bar = bars.create(total, value, payload, { barsize: layout.barsize });
      barOf.set(e.image, bar);
    } else {
      bar.setTotal(total);
      bar.update(value, payload);
    }
  };
  return { show, stop: () => bars.stop() };
}

/** Prints a line per event: at once for a new phase or queue position, byte progress at most every interval. */
function plainRenderer(opts: PullRenderOptions, out: NodeJS.WritableStream, err: NodeJS.WritableStream): (e: PullEvent) => void {
  const now = opts.now ?? Date.now;
  const interval = opts.plainIntervalMs ?? 1000;
  const lastPlain = new Map<string, { phase: string; queuePosition: number; at: number }>();
  return (e: PullEvent) => {
    const prev = lastPlain.get(e.image);
    const t = now();
    // A new phase or a new queue position is worth a line at once; byte progress at most every interval.
    const changed = !prev || prev.phase !== e.phase || prev.queuePosition !== e.queuePosition;
    if (!changed && (t - prev.at < interval || e.phase === 'Queued')) return;
    lastPlain.set(e.image, { phase: e.phase, queuePosition: e.queuePosition, at: t });
    const line = describePullEvent(e, opts.pin);
    (e.phase === 'Failed' ? err : out).write(line + '\n');
  };
}

/** Renders the events of one pull request; resolves with the exit code: 0 if every image ended Done, else 1. */
export async function runPull(source: PullEventSource, opts: PullRenderOptions = {}): Promise<number> {
  const out = opts.out ?? process.stdout;
  const err = opts.err ?? process.stderr;
  const last = new Map<string, PullEvent>();
  const columns = opts.columns ?? ((out as NodeJS.WriteStream).columns || 80);
  const bars = opts.tty && !opts.json ? barRenderer(out, columns) : undefined;
  const showPlain = plainRenderer(opts, out, err);

  let streamError: AgentError | undefined;
  try {
    const events = typeof source === 'function' ? source() : source;
    for await (const e of events) {
      last.set(e.image, e);
      if (opts.json) out.write(streamRecord(opts.yaml ? 'yaml' : 'json', pullEventView(e, !!opts.pin)) + '\n');
      else if (bars) bars.show(e);
      else showPlain(e);
    }
  } catch (e) {
    streamError = asAgentError(e);
  } finally {
    bars?.stop();
  }

  if (bars) {
    // The bars stay on screen; the outcome of each image is printed under them.
    for (const e of last.values()) (e.phase === 'Failed' ? err : out).write(describePullEvent(e, opts.pin) + '\n');
  }
  return reportOutcome(last, streamError, opts, out, err);
}

/** Says what no image's last event said (no result, a stream that failed or sent nothing, the count); the exit code. */
function reportOutcome(last: Map<string, PullEvent>, streamError: AgentError | undefined, opts: PullRenderOptions, out: NodeJS.WritableStream, err: NodeJS.WritableStream): number {
  let ok = last.size > 0 && !streamError;
  for (const e of last.values()) {
    if (e.phase !== 'Done') {
      ok = false;
      if (e.phase !== 'Failed' && !opts.json) err.write(`error: ${e.image}: no result (last seen ${e.phase})\n`);
    }
  }
  const failure = streamError ?? (last.size === 0 ? new AgentError('Unavailable', 'the agent sent no events') : undefined);
  if (failure) {
    err.write(`inplacectl: pull: ${failure.message}\n`);
    if (opts.json) out.write(streamRecord(opts.yaml ? 'yaml' : 'json', jsonError(failure, 1)) + '\n');
  }
  if (!opts.json) {
    const done = [...last.values()].filter((e) => e.phase === 'Done').length;
    const failed = last.size - done;
    if (last.size > 1 || failed > 0) (failed > 0 ? err : out).write(`${done} of ${last.size} image(s) done${failed ? `, ${failed} failed` : ''}\n`);
  }
  return ok ? 0 : 1;
}
