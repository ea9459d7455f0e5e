// Kept connections to the API server. The client library makes a new https.Agent for every API call
// (KubeConfig.applySecurityAuthentication), and an agent without keep-alive opens a TCP connection and a TLS
// handshake per call: on the test cluster at load 10, 18-19 ms a call against 3-8 ms over a kept connection
// (docs/benchmarks.md, bench:k8s). Every call of a kubelet-strategy restart before the kubelet's cue (the
// requester's SubjectAccessReview, the claim, the Pulled event, the patch) paid it. Here the calls of one
// configuration share one keep-alive agent per set of TLS options. Watches open their own connections and are
// not affected.
import https from 'node:https';
import type { KubeConfig } from './client.js';

/** The options of the library's agent that decide which connection may carry a call. */
const TLS_KEYS = ['ca', 'cert', 'key', 'pfx', 'passphrase', 'rejectUnauthorized', 'servername'] as const;

/** What identifies a set of TLS options (file contents are read again for each call, so compared by value). */
function optionsKey(o: https.AgentOptions): string {
  return TLS_KEYS.map((k) => {
    const v = (o as Record<string, unknown>)[k];
    if (v === undefined) return '';
    if (Buffer.isBuffer(v)) return v.toString('base64');
    return Array.isArray(v) ? v.map((x) => (Buffer.isBuffer(x) ? x.toString('base64') : String(x))).join(',') : String(v);
  }).join('|');
}

/**
 * Makes kc's API calls share one keep-alive https.Agent while its TLS options stay the same (a rotated client
 * certificate or CA gets a new one; the old one's idle connections close with the server's idle timeout, its
 * sockets never keep the process alive). Agents of other kinds (proxies, plain http) are left as the library
 * made them. Returns kc.
 */
export function keepConnections(kc: KubeConfig): KubeConfig {
  const apply = kc.applySecurityAuthentication.bind(kc);
  let shared: { key: string; agent: https.Agent } | undefined;
  kc.applySecurityAuthentication = async (context) => {
    await apply(context);
    const made = context.getAgent();
    if (!made || made.constructor !== https.Agent) return;
    const options = (made as https.Agent & { options: https.AgentOptions }).options;
    const key = optionsKey(options);
    if (shared?.key !== key) shared = { key, agent: new https.Agent({ ...options, keepAlive: true }) };
    context.setAgent(shared.agent);
  };
  return kc;
}
