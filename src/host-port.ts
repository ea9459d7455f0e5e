// Network addresses as HOST:PORT text, both ways. An IPv6 host is written in brackets ([fd00::1]:9464), as in
// a URL: unbracketed, "fd00::1:9464" could be an address with no port at all.
import net from 'node:net';

/** Why an address is refused: its text and what was expected. */
const EXPECTED = 'expected HOST:PORT with a port from 0 to 65535 (e.g. 127.0.0.1:9464, [::1]:9464)';

/**
 * `HOST:PORT` as host and port (host optional: 127.0.0.1). An IPv6 host must be in brackets; an IPv4 address
 * or a name may be too, so that a manifest can write `[$(POD_IP)]:9464` for either family. Throws naming the text.
 */
export function parseHostPort(text: string): { host: string; port: number } {
  let host = '127.0.0.1';
  let portText = text;
  const bracketed = /^\[([^\]]*)\]:(.*)$/.exec(text);
  if (bracketed) {
    [, host, portText] = bracketed;
    if (host === '') throw new Error(`${EXPECTED}, got "${text}"`);
  } else if (text.includes('[') || text.includes(']')) {
    throw new Error(`${EXPECTED}, got "${text}"`);
  } else {
    const idx = text.lastIndexOf(':');
    if (idx > 0) host = text.slice(0, idx);
    if (idx >= 0) portText = text.slice(idx + 1);
    if (host.includes(':')) throw new Error(`${EXPECTED}: an IPv6 address goes in brackets ([${host}]:${portText}), got "${text}"`);
  }
  const port = Number(portText);
  if (!/^\d+$/.test(portText) || port > 65535) throw new Error(`${EXPECTED}, got "${text}"`);
  return { host, port };
}

/** host and port as `HOST:PORT`, an IPv6 host in brackets (the form parseHostPort and URLs take). */
export function joinHostPort(host: string, port: number | string): string {
  return net.isIPv6(host) || host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}
