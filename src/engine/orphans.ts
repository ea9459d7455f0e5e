// Containers an operation created that no journal record explains, looked for at start-up before anything
// resumes: reported, or removed when this agent made them for an operation that never got a record.
import { AgentError } from '../errors.js';
import type { Logger } from '../log.js';
import type { Runtime } from '../runtime/runtime.js';
import type { Container } from '../runtime/types.js';
import { isTerminal, type Operation } from './operation.js';
import { AGENT_LABEL, OPERATION_LABEL } from './restart-plan.js';

/** What the look for orphans needs. */
export interface OrphanDeps {
  runtime: Runtime;
  log: Logger;
  /** The operation with this exact id, if known. */
  known(id: string): Operation | undefined;
  /** This agent's identity (see EngineDeps.agentId). */
  agentId?: string;
}

/**
 * Containers created by an operation (labelled with it) that never started, while no unfinished operation
 * in the journal owns them: left by a record that was lost or set aside.
 */
export async function findOrphans(d: OrphanDeps): Promise<Container[]> {
  const all = await d.runtime.listContainers();
  return all.filter((c) => {
    const id = c.labels[OPERATION_LABEL];
    if (!id || c.state !== 'created') return false;
    const op = d.known(id);
    return !op || isTerminal(op.state);
  });
}

/**
 * The orphans (findOrphans) to report, having removed those this agent made for an operation of which no record
 * was ever written, not even one set aside (setAside: the ids of records that could not be read): an operation
 * begins beside its first record (see RestartIntake.record), so an agent that died in between leaves its replacement,
 * created and never started, and nothing else. Another agent's, or one whose record was lost, is reported (and
 * logged), not removed: another agent with its own state directory may share the runtime.
 */
export async function sweepOrphans(d: OrphanDeps, setAside: Set<string>): Promise<Container[]> {
  const orphans: Container[] = [];
  for (const c of await findOrphans(d)) {
    const opId = c.labels[OPERATION_LABEL];
    if (!d.agentId || c.labels[AGENT_LABEL] !== d.agentId || d.known(opId) || setAside.has(opId)) {
      orphans.push(c);
      continue;
    }
    try {
      await d.runtime.removeContainer(c.id);
      d.log.info('removed the replacement of an operation that ended before its first record was written', { container: c.id, name: c.name, pod: c.podId, operation: opId });
    } catch (err) {
      if (!AgentError.is(err, 'NotFound')) orphans.push(c);
    }
  }
  for (const c of orphans) {
    d.log.warn('orphaned container: created by an operation that no journal record explains; remove it when you are sure', {
      container: c.id,
      name: c.name,
      pod: c.podId,
      operation: c.labels[OPERATION_LABEL],
    });
  }
  return orphans;
}
