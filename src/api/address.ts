// Agent API addresses: `unix:///path`, `unix:path`, a bare absolute path, or `host:port`.

/** The socket path of a unix address, undefined for TCP. */
export function unixPath(listen: string): string | undefined {
  if (listen.startsWith('unix://')) return listen.slice('unix://'.length);
  if (listen.startsWith('unix:')) return listen.slice('unix:'.length);
  if (listen.startsWith('/')) return listen;
  return undefined;
}
