#!/usr/bin/env node
// inplace-agent: the node daemon's entry point. Parses flags, starts the daemon, drains on SIGTERM/SIGINT.
import { readFileSync } from 'node:fs';
import { createLogger } from '../log.js';
import { asAgentError } from '../errors.js';
import { daemonCommand, daemonOptions } from './options.js';
import { startDaemon } from './daemon.js';

const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string };
const cmd = daemonCommand(pkg.version);
cmd.parse(process.argv);

let log = createLogger();
try {
  const opts = daemonOptions(cmd);
  log = createLogger(opts.logLevel, opts.logFormat);
  const daemon = await startDaemon(opts, log);
  const stop = (sig: string) => {
    log.info('signal received', { signal: sig });
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
