// What `inplacectl cancel` does, by where the operation is: in its help, and in what it prints when asked.
import type { OperationView } from '../api/convert.js';
import { stateText } from './progress.js';

/** cancel's help: what a cancel does in each phase (the engine's safe points, src/engine/restart-executor.ts). */
export const CANCEL_HELP = `
What a cancel does depends on where the operation is:
  pending                 it ends Cancelled; nothing was touched
  pulling images          the pull stops (unless another request waits on the same image); nothing was
                          stopped; it ends Cancelled
  creating / created      the replacement is removed and the old container keeps running; it ends RolledBack
  stopping .. started     the old container is already stopping: the replacement is carried on, checked
                          running, and kept (the old container is removed); it ends Cancelled
  verifying               the min-ready wait ends at once: a running replacement is kept (the old container
                          is removed), one that is not running is rolled back; it ends Cancelled
With several containers, those already replaced stay replaced and those not begun are not touched.
\`inplacectl watch OP\` shows what happened.`;

/** Steps during which a cancel discards the replacement and leaves the old container running. */
const BEFORE_STOP = new Set(['Waiting', 'Creating', 'Created']);

/** One sentence on what the cancel of op (as the agent answered it) will do. */
export function cancelEffect(op: OperationView): string {
  const current = op.containers.find((c) => c.step !== 'Done' && c.step !== 'Waiting') ?? op.containers.find((c) => c.step === 'Waiting');
  const done = op.containers.filter((c) => c.step === 'Done').map((c) => c.name);
  const kept = done.length > 0 ? `; ${done.join(', ')} stay${done.length === 1 ? 's' : ''} replaced` : '';
  switch (op.state) {
    case 'Pending':
      return 'it ends before anything is touched';
    case 'Pulling':
      return 'the pull stops unless another request waits on the image; nothing is stopped';
    case 'Recreating':
    case 'Verifying':
      if (!current) return `it stops at its next safe point${kept}`;
      if (BEFORE_STOP.has(current.step)) {
        return current.step === 'Waiting' ? `${current.name} is not touched${kept}` : `the replacement of ${current.name} is removed and its old container keeps running${kept}`;
      }
      return `the replacement of ${current.name} is kept once it is seen running (the min-ready wait is cut short) and the old container removed${kept}`;
    default:
      return `it had already ended (${stateText(op.state)})`;
  }
}
