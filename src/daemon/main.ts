#!/usr/bin/env -S node --max-semi-space-size=1 --v8-pool-size=1 --optimize-for-size --no-opt
// inplace-agent: the node daemon's entry point. Parses flags, starts the daemon, drains on SIGTERM/SIGINT and
// exits within the drain timeout whatever it still waits on (shutdown-bound.ts).
// Node flags for a small, mostly idle daemon (bench:rss, bench:soak; docs/benchmarks.md): V8's young generation
// is kept at 1 MiB per semi-space (16 by default; idle RSS about 6 MiB lower, and a burst of 200 requests peaks
// no higher, for more frequent minor GCs), V8 gets one worker thread instead of one per core (about 1 MiB), and
// V8 favours memory over speed (--optimize-for-size: about 3 MiB; the agent waits on runtimes, not on its JS), and
// V8's optimizing compiler (TurboFan) is off (--no-opt: about 6 MiB idle; the baseline compiler still runs hot
// code, and bench:restart measured the same a/b with and without it).
// Launchers that run `node main.js` themselves read these flags from this line (scripts/kube-deploy-agent,
// bench/agent-launch.ts).
// First: a stand-in for the OpenTelemetry API, before prom-client is loaded (see without-otel.ts).
import './without-otel.js';
import { readFileSync } from 'node:fs';
import { createLogger } from '../log.js';
import { asAgentError } from '../errors.js';
import { CommanderError } from 'commander';
import { daemonCommand, daemonOptions, DaemonUsageError, type DaemonOptions } from './options.js';
import { startDaemon } from './daemon.js';
import { armShutdownBound, shutdownBoundMs } from './shutdown-bound.js';

/** Exit status of bad usage (an unknown flag, a bad choice or value), as inplacectl's. */
const EXIT_USAGE = 2;
const USAGE_HINT = "(run 'inplace-agent --help' for usage)";

const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string };
const cmd = daemonCommand(pkg.version)
  .exitOverride()
  .showHelpAfterError(USAGE_HINT)
  .configureOutput({ outputError: (str, write) => write(`inplace-agent: ${str.replace(/^error: /, '').replace(/\n\(Did you mean (.+)\?\)/, ' (did you mean $1?)').trim()}\n`) });
let opts: DaemonOptions;
try {
  cmd.parse(process.argv);
  opts = daemonOptions(cmd);
} catch (err) {
  // --help and --version end here with 0; commander printed its own errors.
  if (err instanceof CommanderError) process.exit(err.exitCode === 0 ? 0 : EXIT_USAGE);
  if (!(err instanceof DaemonUsageError)) throw err;
  process.stderr.write(`inplace-agent: ${err.message}\n${USAGE_HINT}\n`);
  process.exit(EXIT_USAGE);
}

let log = createLogger();
try {
  log = createLogger(opts.logLevel, opts.logFormat);
  const daemon = await startDaemon(opts, log);
  const stop = (sig: string) => {
    log.info('signal received', { signal: sig });
    armShutdownBound(shutdownBoundMs(opts.drainTimeoutMs), log);
    daemon.shutdown().then(
      () => process.exit(0),
      (err: unknown) => {
        log.error('shutdown failed', { error: String(err) });
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));
  // SIGHUP re-reads --authz-file (and would otherwise end the process).
  process.on('SIGHUP', () => {
    log.info('signal received', { signal: 'SIGHUP' });
    daemon.reloadAccess();
  });
} catch (err) {
  log.error(`inplace-agent cannot start: ${asAgentError(err).message}`);
  process.exit(1);
}
