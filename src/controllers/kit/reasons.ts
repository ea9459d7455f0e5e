// Fixed reasons every coordinator gives for the same thing (a rollout's condition, a SidecarSet's): a status is
// read by people and scripts, so the same failure has the same word whichever controller met it.

/** Reasons shared by the controllers that create objects and pre-warm images. */
export const KitReasons = {
  /** The name of an object the controller would create is held by one it does not own (a squatter, or another owner). */
  nameTaken: 'NameTaken',
  /** The API server refused an object the controller would create (422): its create is tried again with a back-off. */
  createRefused: 'CreateRefused',
  /** The new images are being pulled on the nodes of the pods to update; no restart yet. */
  prewarming: 'Prewarming',
  /** A node could not pull them: the update stops before any pod. */
  prewarmFailed: 'PrewarmFailed',
} as const;
