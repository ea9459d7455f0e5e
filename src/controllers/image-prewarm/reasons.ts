// Fixed reasons of the fleet pre-warm's records (NodePrewarm images, ImagePrewarm failed nodes), the same words
// as the restart engine's for the same failures (engine/reasons.ts; test/unit/fleet-logic.test.ts holds them equal).

/** Why an image of a pre-warm could not be made present on a node. */
export const PrewarmReasons = {
  PullFailed: 'ImagePullFailed',
  Deadline: 'DeadlineExceeded',
  /** Pulled, but pinning it would take the node over --max-pinned-bytes. */
  PinLimit: 'PinLimitExceeded',
} as const;
