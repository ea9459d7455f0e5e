// The daemon's Kubernetes side in one module, imported only when a kubeconfig is found: an agent outside
// Kubernetes never loads the Kubernetes client library.
export { kubeConfigFrom } from '../k8s/kubeconfig.js';
export { limitRequests } from '../k8s/request-deadline.js';
export { createKubeMode } from '../kube/kube-mode.js';
export { startContainerRestarts } from './container-restart-wiring.js';
export { startFleet } from './fleet-wiring.js';
export { kubeMetrics } from './kube-metrics.js';
export { startRollouts } from './rollout-wiring.js';
export { startSidecarSets } from './sidecarset-wiring.js';
export { watchClusterHolds } from './cluster-holds-wiring.js';
