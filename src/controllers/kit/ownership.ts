// What a controller treats as its own. Everything it creates carries a controller ownerReference with its uid;
// anything else, whatever its name or labels, is someone else's. A label still narrows lists and watches, but a
// label is written by whoever may patch the object, so it decides nothing:
//
//   count an object as the owner's       its controller ownerReference names the owner's kind and uid
//   take a create's 409 as "started"      the object found is the owner's and asks what it would ask (create-or-taken.ts)
//   delete an object                      the owner's (and, for a cluster-scoped one, named with the owner's prefix)
//
// An ownerReference is written by whoever creates the object, so one may be forged: a forged one that asks
// something else is a name taken, and deletion also asks for the owner's name prefix where others could create.
import { sameJson } from '../../same-json.js';

/** An ownerReference as objects carry it. */
export interface OwnerRef {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

/** An owner: the object whose uid its dependents name. */
export interface Owner {
  apiVersion: string;
  kind: string;
  metadata: { name: string; uid?: string };
}

/** Any object: its metadata is read for owners. */
type Owned = { metadata?: unknown };

/** The controller ownerReference an owner of apiVersion and kind puts on what it creates. */
export function controllerRef(apiVersion: string, kind: string, owner: { metadata: { name: string; uid?: string } }): OwnerRef {
  return { apiVersion, kind, name: owner.metadata.name, uid: owner.metadata.uid ?? '', controller: true };
}

/** obj's controller ownerReference (controller: true); undefined when it has none. */
export function controllerOf(obj: Owned): OwnerRef | undefined {
  return ((obj.metadata as { ownerReferences?: OwnerRef[] } | undefined)?.ownerReferences ?? []).find((r) => r.controller === true);
}

/** Whether obj's controller ownerReference names this uid (workloads, whose kind the caller knows). */
export function controlledBy(uid: string, obj: Owned): boolean {
  return !!uid && controllerOf(obj)?.uid === uid;
}

/** The ownership rules of one kind of owner: the reference it puts on what it creates, and whether it owns an object. */
export interface OwnerKind {
  kind: string;
  /** The controller ownerReference an owner of this kind puts on what it creates. */
  ref(owner: { metadata: { name: string; uid?: string } }): OwnerRef;
  /** Whether obj's controller ownerReference names the owner of this kind with this uid. */
  owns(uid: string, obj: Owned): boolean;
}

/** The rules for owners of this API group, version and kind. */
export function ownerKind(group: string, version: string, kind: string): OwnerKind {
  return { kind, ref: (owner) => controllerRef(`${group}/${version}`, kind, owner), owns: (uid, obj) => ownedBy({ group, kind }, uid, obj) };
}

/** Why obj is not the owner's own (undefined: it is): the words a NameTaken message gives. */
export function notOwned(kind: OwnerKind, owner: { metadata: { name: string; uid?: string } }, obj: Owned): string | undefined {
  const uid = owner.metadata.uid ?? '';
  return kind.owns(uid, obj) ? undefined : `it has no controller ownerReference to ${kind.kind} ${owner.metadata.name} (uid ${uid})`;
}

/** A ContainerRestart as far as ownership compares it. */
type RestartLike = { metadata?: unknown; spec?: { podName?: string; containers?: unknown } };

/** Why found is not the ContainerRestart the owner wanted: not its own, or another pod or containers (undefined: it is). */
export function restartMismatch(kind: OwnerKind, owner: { metadata: { name: string; uid?: string } }, who: string, found: RestartLike, wanted: RestartLike): string | undefined {
  const why = notOwned(kind, owner, found);
  if (why) return why;
  if (found.spec?.podName !== wanted.spec?.podName || !sameJson(found.spec?.containers, wanted.spec?.containers)) return `it asks for another pod or other images than ${who} would`;
  return undefined;
}

/** Whether obj's controller ownerReference names the owner of this group, kind and uid. */
export function ownedBy(owner: { group: string; kind: string }, uid: string, obj: Owned): boolean {
  const ctl = controllerOf(obj);
  return !!uid && ctl?.uid === uid && ctl.kind === owner.kind && ctl.apiVersion.startsWith(`${owner.group}/`);
}
