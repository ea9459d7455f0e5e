// A create whose name may be taken. Names are predictable (names.ts), so a create's 409 proves nothing: it counts
// as "already started" only when the object found is the controller's own and asks what it would ask; otherwise
// the name is taken (NameTaken, naming the object and why), and a 422 is a create the API server refused
// (CreateRefused). The caller hands the conflict to its planner, whose status names it, and backs off
// (create-refusals.ts).
import { AgentError } from '../../errors.js';
import { isConflict } from '../../k8s/api-error.js';
import type { Logger } from '../../log.js';
import { KitReasons } from './reasons.js';

/** An object a round could not create, and why: the planner makes it a failure in the status. */
export interface CreateConflict {
  kind: 'ContainerRestart' | 'ImagePrewarm';
  /** The object's name (namespace/name for a namespaced one the status names). */
  name: string;
  reason: typeof KitReasons.nameTaken | typeof KitReasons.createRefused;
  /** What the API server or the owner check said. */
  message: string;
}

/** One create, and how to judge what holds its name. */
export interface OwnedCreate<T> {
  kind: CreateConflict['kind'];
  name: string;
  /** How the messages name the object (namespace/name where the owner's status spans namespaces); default name. */
  shown?: string;
  /** Who creates, for the messages ("this rollout"). */
  owner: string;
  create: () => Promise<unknown>;
  /** The object now holding the name; undefined when it is gone (the next round creates it). */
  found: () => Promise<T | undefined>;
  /** Why the object found is not the one wanted; undefined: it is (the create was done already). */
  mismatch: (found: T) => string | undefined;
}

/** Creates c's object; answers undefined when it exists now as wanted, else the conflict the status names. */
export async function createOrTaken<T>(c: OwnedCreate<T>, log: Logger): Promise<CreateConflict | undefined> {
  try {
    await c.create();
    return undefined;
  } catch (err) {
    if (AgentError.is(err, 'InvalidArgument')) return { kind: c.kind, name: c.name, reason: KitReasons.createRefused, message: `the API server refused ${c.kind} ${c.shown ?? c.name}: ${(err as Error).message}` };
    if (!isConflict(err)) throw err;
  }
  // Exists: started already (by this agent or an earlier coordinator), or the name is taken.
  const found = await c.found();
  const why = found === undefined ? undefined : c.mismatch(found);
  if (why === undefined) return undefined;
  log.warn('the name of what a coordinator would create is taken by an object it does not own', { owner: c.owner, kind: c.kind, name: c.shown ?? c.name, why });
  return { kind: c.kind, name: c.name, reason: KitReasons.nameTaken, message: `${c.kind} ${c.shown ?? c.name} exists and is not ${c.owner}'s: ${why}` };
}
