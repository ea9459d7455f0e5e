// How a controller's ImagePrewarm pulls (the fleet pre-warm, controllers/image-prewarm): the same for a rollout's
// and a SidecarSet's.

/** Nodes pulling at once for one ImagePrewarm (its maxParallelNodes). */
export const PREWARM_PARALLEL_NODES = 5;
/** Attempts per image and node after the first before the pre-warm gives up on a node (its backoffLimit). */
export const PREWARM_BACKOFF_LIMIT = 2;
/** While a coordinator waits for its pre-warm, it looks again this often (the nodes' records are read, not watched; ms). */
export const PREWARM_RECHECK_MS = 500;
/** While no agent has reported on a pre-warm for this long, the status names the fleet RBAC (ms). */
export const PREWARM_SILENT_HINT_MS = 30_000;
