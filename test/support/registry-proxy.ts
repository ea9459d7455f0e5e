// A loopback HTTP proxy in front of a registry that counts blob downloads and can stall mid-blob (forward some
// bytes, then send nothing more while keeping the connection open), for the pull tests and the benchmark.
import http from 'node:http';
import type net from 'node:net';

/** A running proxy. */
export interface RegistryProxy {
  /** `127.0.0.1:PORT`: use it as the registry host in image references. */
  host: string;
  /** GET requests per blob digest that were answered with content (200/206). */
  blobGets: Map<string, number>;
  /** Total GET requests for blobs. */
  totalBlobGets(): number;
  /** Every request line seen (`METHOD path`). */
  requests: string[];
  /** From now on, blob responses larger than minBlobBytes stop after `afterBytes` bytes (0: stall off). */
  setStall(afterBytes: number, minBlobBytes?: number): void;
  /** From now on, blob responses are sent at most this fast (0: no limit). */
  setRate(bytesPerSecond: number): void;
  /** Bytes forwarded in blob responses so far. */
  bytesForwarded(): number;
  /** Blob responses under way: begun, and their connection to the client not closed yet. */
  blobsInFlight(): number;
  close(): Promise<void>;
}

/** A blob download seen by the proxy: when it started and ended (ms since the epoch). */
export interface BlobDownload {
  digest: string;
  start: number;
  end: number;
}

/** Starts a proxy on a free loopback port forwarding to upstream (`host:port`); onBlob hears each finished blob download. */
export async function startRegistryProxy(upstream: string, onBlob?: (d: BlobDownload) => void): Promise<RegistryProxy> {
  const [upHost, upPort] = upstream.split(':');
  const blobGets = new Map<string, number>();
  const requests: string[] = [];
  const sockets = new Set<net.Socket>();
  let stallAfter = 0;
  let stallMin = 0;
  let forwarded = 0;
  let rate = 0;
  let inFlight = 0;

  const server = http.createServer((req, res) => {
    requests.push(`${req.method} ${req.url}`);
    const blob = /\/blobs\/(sha256:[a-f0-9]{64})/.exec(req.url ?? '');
    const started = Date.now();
    const up = http.request(
      { host: upHost, port: Number(upPort), method: req.method, path: req.url, headers: req.headers },
      (upRes) => {
        const isBlobBody = blob && req.method === 'GET' && (upRes.statusCode === 200 || upRes.statusCode === 206);
        if (isBlobBody) {
          blobGets.set(blob[1], (blobGets.get(blob[1]) ?? 0) + 1);
          inFlight++;
          res.once('close', () => inFlight--);
        }
        res.writeHead(upRes.statusCode ?? 502, upRes.headers);
        const length = Number(upRes.headers['content-length'] ?? 0);
        const stallAt = isBlobBody && stallAfter > 0 && length > stallMin ? stallAfter : 0;
        let sent = 0;
        upRes.on('data', (chunk: Buffer) => {
          if (stallAt > 0 && sent + chunk.length > stallAt) {
            const part = chunk.subarray(0, Math.max(0, stallAt - sent));
            if (part.length) res.write(part);
            sent = stallAt;
            forwarded += part.length;
            upRes.pause();
            upRes.removeAllListeners('data');
            upRes.removeAllListeners('end');
            return; // stall: keep the client's connection open, send nothing more
          }
          sent += chunk.length;
          if (isBlobBody) forwarded += chunk.length;
          res.write(chunk);
          if (isBlobBody && rate > 0) {
            upRes.pause();
            setTimeout(() => upRes.resume(), (chunk.length / rate) * 1000);
          }
        });
        upRes.on('end', () => {
          res.end();
          if (isBlobBody && blob) onBlob?.({ digest: blob[1], start: started, end: Date.now() });
        });
      },
    );
    res.on('close', () => up.destroy());
    up.on('error', (err) => {
      if (!res.headersSent) res.writeHead(502);
      res.end(String(err));
    });
    req.pipe(up);
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  return {
    host: `127.0.0.1:${port}`,
    blobGets,
    requests,
    totalBlobGets: () => [...blobGets.values()].reduce((a, b) => a + b, 0),
    setStall: (afterBytes, minBlobBytes = 1024 * 1024) => {
      stallAfter = afterBytes;
      stallMin = minBlobBytes;
    },
    setRate: (bytesPerSecond) => {
      rate = bytesPerSecond;
    },
    bytesForwarded: () => forwarded,
    blobsInFlight: () => inFlight,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
