// Agent API addresses: `unix:///path`, `unix:path`, a bare absolute path, or `host:port`.

/** The agent's socket when none is given: where the daemon listens and the client dials by default. */
export const DEFAULT_AGENT_SOCKET = 'unix:///run/inplace-agent/agent.sock';

/** The socket path of a unix address, undefined for TCP. */
export function unixPath(listen: string): string | undefined {
  if (listen.startsWith('unix://')) return listen.slice('unix://'.length);
  if (listen.startsWith('unix:')) return listen.slice('unix:'.length);
  if (listen.startsWith('/')) return listen;
  return undefined;
}
