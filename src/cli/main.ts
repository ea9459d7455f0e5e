#!/usr/bin/env node
// inplacectl: the agent's command-line client (the commands are in program.ts).
import { main } from './program.js';

// grpc-js passes an IP address as the TLS server name when --agent is an IP; Node then warns (DEP0123) on
// every TCP run. The certificate is still checked against that IP, so the warning only adds noise.
process.removeAllListeners('warning');
process.on('warning', (w: Error & { code?: string }) => {
  if (w.code !== 'DEP0123') process.stderr.write(`inplacectl: warning: ${w.name}: ${w.message}\n`);
});
// A reader that goes away (`inplacectl restart ... | head`) ends the output, not the program with a stack trace;
// an operation it started goes on in the agent (`inplacectl ops` finds it).
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code !== 'EPIPE') throw err;
  process.exit(0);
});
const code = await main(process.argv);
process.exit(code);
