// The Kubernetes client library (@kubernetes/client-node, kept as it is) as the agent and inplacectl load it:
// every src/ module imports it through this one. The build (scripts/bundle-kube-client.mjs) replaces this
// module's output with one esbuild bundle of the library: loaded as its ~1,000 modules it costs an agent about
// 57 MiB of RSS, as one module about 20 (docs/benchmarks.md).
export * from '@kubernetes/client-node';
