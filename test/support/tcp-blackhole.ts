// A loopback TCP relay in front of a real server (the API server: TLS passes through untouched) that can go
// silent: from blackhole() on, nothing more is relayed either way on any connection, and new connections are
// accepted and then never answered, as a peer behind a dropped route would be. close() ends it all.
import net from 'node:net';
import type { AddressInfo } from 'node:net';

/** A running relay. */
export interface TcpBlackhole {
  /** The loopback port it listens on. */
  port: number;
  /** Stops relaying: every byte from now on, either way, is dropped, and the sockets stay open. */
  blackhole(): void;
  /** Closes the listener and every connection. */
  close(): Promise<void>;
}

/** Starts a relay on 127.0.0.1 to host:port. */
export async function startTcpBlackhole(host: string, port: number): Promise<TcpBlackhole> {
  let silent = false;
  const sockets = new Set<net.Socket>();
  const track = (s: net.Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('error', () => undefined);
  };
  const server = net.createServer((client) => {
    track(client);
    if (silent) {
      client.on('data', () => undefined); // read and drop
      return;
    }
    const upstream = net.connect(port, host);
    track(upstream);
    client.on('data', (d: Buffer) => void (silent || upstream.write(d)));
    upstream.on('data', (d: Buffer) => void (silent || client.write(d)));
    client.on('end', () => void (silent || upstream.end()));
    upstream.on('end', () => void (silent || client.end()));
    client.on('close', () => void (silent || upstream.destroy()));
    upstream.on('close', () => void (silent || client.destroy()));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    blackhole: () => void (silent = true),
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
