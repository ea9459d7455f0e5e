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

/** Whether obj's controller ownerReference names the owner of this group, kind and uid. */
export function ownedBy(owner: { group: string; kind: string }, uid: string, obj: Owned): boolean {
  const ctl = controllerOf(obj);
  return !!uid && ctl?.uid === uid && ctl.kind === owner.kind && ctl.apiVersion.startsWith(`${owner.group}/`);
}
