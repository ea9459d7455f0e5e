// Admission as the requester: before the agent changes a pod's images for a request, the same patch is sent as a
// server-side dry run (dryRun=All) impersonating the request's creator, so that admission rules keyed on the user
// (a ValidatingAdmissionPolicy on request.userInfo, a webhook) judge the creator, not the agent's ServiceAccount.
// Nothing is persisted. The agent holds constrained impersonation of ServiceAccounts only (Kubernetes 1.36,
// KEP-5284: `impersonate:serviceaccount`, and `impersonate-on:serviceaccount:patch` on pods), and a ServiceAccount
// is impersonated by its name alone (the API server adds its groups; the mode takes no uid). Such a request has no
// uid, which no real ServiceAccount token lacks, so deploy/node-isolation-policy.yaml refuses it unless it is a
// dry run: the agent's token cannot write as anyone else. Another kind of user is not impersonated at all (its
// write could not be told from the user's own): admission sees the agent for it (docs/security.md).
import http from 'node:http';
import https from 'node:https';
import type { KubeConfig } from '../../k8s/client.js';
import { AgentError } from '../../errors.js';
import { RefusalReasons } from '../../engine/reasons.js';
import { FIELD_MANAGER } from '../../k8s/kube-api.js';
import { serviceAccountOf } from './requester-alive.js';
import { selfRequester, type Requester } from '../../k8s/requester.js';

/** Sends a pod patch as a dry run, as a user. */
export interface AdmissionProbe {
  /**
   * Resolves when admission lets `requester` make the patch (or when the pod is gone: the request fails later on
   * its own); 'unavailable' when the requester is not a ServiceAccount or the cluster does not let the agent
   * impersonate it (no rights, no constrained impersonation). Throws AgentError PermissionDenied (reason AdmissionRefused) with admission's message when it
   * refuses, Unavailable when the API server cannot be reached.
   */
  patchPodAs(requester: Requester, namespace: string, name: string, patch: object): Promise<void | 'unavailable'>;
}

/** The impersonation headers for a ServiceAccount requester (its name alone), or undefined for any other user. */
export function impersonationHeaders(r: Requester): Record<string, string> | undefined {
  return serviceAccountOf(r.username) ? { 'Impersonate-User': r.username } : undefined;
}

/** AdmissionProbe over the API server of kc. */
export class ImpersonatedDryRun implements AdmissionProbe {
  private self?: Promise<string | undefined>;

  constructor(private readonly kc: KubeConfig) {}

  async patchPodAs(requester: Requester, namespace: string, name: string, patch: object): Promise<void | 'unavailable'> {
    const as = impersonationHeaders(requester);
    if (!as) return 'unavailable';
    // A request the agent itself made (a SidecarSet's upgrade): the pod patch is made as that very user, so
    // admission judges it then. Impersonating itself would only lose its token's node claim, which the
    // node-isolation policy refuses.
    if ((await this.selfName()) === requester.username) return;
    const server = this.kc.getCurrentCluster()?.server;
    if (!server) throw new AgentError('FailedPrecondition', 'the kubeconfig names no API server');
    const url = new URL(`/api/v1/namespaces/${encodeURIComponent(namespace)}/pods/${encodeURIComponent(name)}`, server);
    url.searchParams.set('dryRun', 'All');
    url.searchParams.set('fieldManager', FIELD_MANAGER);
    const opts: https.RequestOptions = { method: 'PATCH', headers: {} };
    await this.kc.applyToHTTPSOptions(opts);
    opts.headers = { ...opts.headers, ...as, 'Content-Type': 'application/strategic-merge-patch+json', Accept: 'application/json' };
    const { status, body } = await send(url, opts, JSON.stringify(patch));
    if (status >= 200 && status < 300) return;
    const message = statusMessage(body);
    if (status === 404) return;
    // The agent may not impersonate here: the rights of deploy/rbac.yaml are missing, or the API server has no
    // constrained impersonation. Then admission sees the agent, as without this check.
    if (status === 403 && /cannot impersonate/.test(message)) return 'unavailable';
    if (status >= 500 || status === 429) throw new AgentError('Unavailable', `dry run of the pod patch as ${requester.username}: HTTP ${status}: ${message}`);
    throw new AgentError('PermissionDenied', `admission refuses ${requester.username} this change of pod ${namespace}/${name} (a dry run as that user: HTTP ${status}): ${message}; nothing was touched`, {
      reason: RefusalReasons.AdmissionRefused,
    });
  }

  /** The agent's own username (a SelfSubjectReview, once; undefined while it cannot be had). */
  private selfName(): Promise<string | undefined> {
    return (this.self ??= selfRequester(this.kc).then(
      (r) => r.username,
      () => {
        this.self = undefined;
        return undefined;
      },
    ));
  }
}

/** The Status message of an API server's answer, or the start of the body. */
function statusMessage(body: string): string {
  try {
    const m = (JSON.parse(body) as { message?: unknown }).message;
    if (typeof m === 'string') return m;
  } catch {
    // not a Status object
  }
  return body.slice(0, 300);
}

/** One request; the status and body of its answer. Unavailable when the API server cannot be reached. */
function send(url: URL, opts: https.RequestOptions, body: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = (url.protocol === 'http:' ? http : https).request(url, { ...opts, timeout: 30_000 }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', (err) => reject(new AgentError('Unavailable', `dry run of a pod patch: ${err.message}`, { cause: err })));
    });
    req.on('timeout', () => req.destroy(new Error('no answer in 30 s')));
    req.on('error', (err) => reject(new AgentError('Unavailable', `dry run of a pod patch: ${err.message}`, { cause: err })));
    req.end(body);
  });
}
