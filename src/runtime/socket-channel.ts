// gRPC channel settings for a runtime on a local socket (containerd's CRI and its own API).
import type { ChannelOptions } from '@grpc/grpc-js';

/**
 * Reconnect back-off for a runtime socket: when the runtime restarts, the channel tries again every 100-500 ms
 * (grpc-js's default grows to minutes, and left the agent answering UNAVAILABLE for about 10 s after
 * containerd was back). A refused connect on a local socket costs next to nothing.
 */
export const RUNTIME_SOCKET_CHANNEL_OPTIONS: ChannelOptions = {
  'grpc.initial_reconnect_backoff_ms': 100,
  'grpc.max_reconnect_backoff_ms': 500,
};
