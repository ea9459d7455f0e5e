// Following one operation from the CLI: every journaled step printed once, in order, until it ends.
import type { AgentClient } from '../api/client.js';
import type { OperationView as Operation } from '../api/convert.js';
import { isFinishedState } from '../api/operation-states.js';
import { ProgressPrinter } from './progress.js';
import { EXIT } from './exit-codes.js';
import { print, type Globals } from './agent-session.js';

/**
 * Follows an operation until it ends, printing every journaled step once, in order (timed from the
 * operation's creation), then the final record as render says; an end other than Succeeded is a failed exit.
 * joined: the caller did not start it (watch), so what happened before the first view is replayed under a header.
 */
export async function followToEnd(g: Globals, c: AgentClient, first: Operation, joined: boolean, render: (op: Operation) => string): Promise<void> {
  const end = await follow(g, c, first, joined);
  print(g, end, render(end));
  if (end.state !== 'Succeeded') process.exitCode = EXIT.failed;
}

/** followToEnd's steps: returns the final record. */
export async function follow(g: Globals, c: AgentClient, first: Operation, joined: boolean): Promise<Operation> {
  const printer = new ProgressPrinter();
  const show = (op: Operation) => {
    if (g.output === 'text') for (const line of printer.next(op)) process.stdout.write(line + '\n');
  };
  if (joined && g.output === 'text') {
    const header = ProgressPrinter.joinHeader(first);
    process.stdout.write((header ?? `operation ${first.id} on pod ${first.podName}`) + '\n');
  }
  let last = first;
  show(first);
  if (isFinishedState(first.state)) return first;
  for await (const op of c.watchOperation(first.id)) {
    show(op);
    last = op;
    if (isFinishedState(op.state)) break;
  }
  return last;
}
