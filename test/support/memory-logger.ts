// A winston logger that keeps every line (JSON) in memory, so tests can assert what was logged.
import { Writable } from 'node:stream';
import winston from 'winston';

/** A logger and the lines it wrote. */
export function memoryLogger(): { logger: winston.Logger; lines: string[] } {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, cb) {
      lines.push(chunk.toString());
      cb();
    },
  });
  const logger = winston.createLogger({ level: 'debug', format: winston.format.json(), transports: [new winston.transports.Stream({ stream })] });
  return { logger, lines };
}
