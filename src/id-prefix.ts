// How short an id may be given: shared by the CLI, the engine and the adapters that match pods and operations
// by a prefix of their id.

/** Least length of an id prefix that picks a pod or an operation (ids are printed with 12 and 8 characters). */
export const MIN_ID_PREFIX = 6;
