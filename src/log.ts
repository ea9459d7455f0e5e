// The agent's logger: winston, JSON or text, one instance per process.
import winston from 'winston';

/** Log output formats the daemon accepts. */
export type LogFormat = 'json' | 'text';

/** The levels the daemon accepts, most severe first. */
export const LOG_LEVELS = ['error', 'warn', 'info', 'debug'];

/** A logger with the usual levels; child() adds fixed fields. */
export type Logger = winston.Logger;

/** Creates a logger writing to stderr at the given level and format. */
export function createLogger(level = 'info', format: LogFormat = 'text'): Logger {
  const fmt =
    format === 'json'
      ? winston.format.combine(winston.format.timestamp(), winston.format.errors({ stack: false }), winston.format.json())
      : winston.format.combine(
          winston.format.timestamp(),
          winston.format.errors({ stack: false }),
          winston.format.printf(({ timestamp, level: lvl, message, ...rest }) => {
            const fields = Object.entries(rest)
              .filter(([k]) => typeof k === 'string')
              .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
              .join(' ');
            return `${String(timestamp)} ${lvl} ${String(message)}${fields ? ' ' + fields : ''}`;
          }),
        );
  return winston.createLogger({
    level,
    format: fmt,
    transports: [new winston.transports.Console({ stderrLevels: Object.keys(winston.config.npm.levels) })],
  });
}

/** A logger that drops everything (tests, library use). */
export function silentLogger(): Logger {
  return winston.createLogger({ silent: true, transports: [new winston.transports.Console({ silent: true })] });
}
