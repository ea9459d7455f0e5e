// Who may call the agent, as configured: TLS files and the --authz-file policy for a TCP --listen (checked
// before anything starts), the metric and log line of every refusal, and reloading the policy on SIGHUP.
import { Counter, type Registry } from 'prom-client';
import { AgentError } from '../errors.js';
import type { Logger } from '../log.js';
import { unixPath } from '../api/address.js';
import { AuthzPolicy, callerLabel, type Denial } from '../api/authz.js';
import { serverCredentials, type ServerTlsFiles } from '../api/tls.js';

/** The access settings the daemon takes from its options. */
export interface AccessOptions {
  listen: string;
  tlsCert?: string;
  tlsKey?: string;
  clientCa?: string;
  authzFile?: string;
}

/** The agent's access control: valid from construction, or construction throws AgentError(InvalidArgument). */
export class AccessControl {
  readonly tls: ServerTlsFiles;
  private policy?: AuthzPolicy;
  private denied?: Counter<'method' | 'permission'>;
  private reloads?: Counter<'result'>;

  constructor(private readonly opts: AccessOptions, private readonly log: Logger) {
    this.tls = { cert: opts.tlsCert, key: opts.tlsKey, clientCa: opts.clientCa };
    // Throws for TCP without the three files, TLS files on a unix socket, bad or expired files.
    serverCredentials(opts.listen, this.tls);
    const tcp = !unixPath(opts.listen);
    if (tcp && !opts.authzFile) {
      throw new AgentError('InvalidArgument', `--listen ${opts.listen} is TCP: give --authz-file, the list of client certificate names allowed to read, pull, restart and cancel`);
    }
    if (!tcp && opts.authzFile) {
      throw new AgentError('InvalidArgument', `--authz-file applies to a TCP --listen only; the unix socket ${opts.listen} is guarded by its mode (0660) and --socket-group`);
    }
    if (opts.authzFile) this.policy = AuthzPolicy.load(opts.authzFile);
  }

  /** Registers the refusal and reload counters. */
  register(registry: Registry): void {
    this.denied = new Counter({
      name: 'inplace_agent_api_denied_total',
      help: 'Agent API calls refused by the --authz-file policy, by method and the permission it needs',
      labelNames: ['method', 'permission'],
      registers: [registry],
    });
    this.reloads = new Counter({
      name: 'inplace_agent_authz_reloads_total',
      help: 'Reloads of the --authz-file policy (SIGHUP), by result: ok, or invalid (the previous policy stays)',
      labelNames: ['result'],
      registers: [registry],
    });
  }

  /** What the API server needs to authorize calls; undefined on the unix socket. */
  authz(): { policy: () => AuthzPolicy; onDenied: (d: Denial) => void } | undefined {
    if (!this.policy) return undefined;
    return {
      policy: () => this.policy as AuthzPolicy,
      onDenied: (d) => {
        this.denied?.inc({ method: d.method.split('/').pop() ?? d.method, permission: d.permission ?? 'none' });
        this.log.warn('call refused', { caller: callerLabel(d.names), method: d.method, needs: d.permission ?? 'unknown method', peer: d.peer });
      },
    };
  }

  /** Reads the policy file again; an invalid file is logged and the policy in force stays. */
  reload(): void {
    if (!this.opts.authzFile) return;
    try {
      this.policy = AuthzPolicy.load(this.opts.authzFile);
      this.reloads?.inc({ result: 'ok' });
      this.log.info('authorization policy reloaded', { file: this.opts.authzFile, ...this.policy.summary() });
    } catch (err) {
      this.reloads?.inc({ result: 'invalid' });
      this.log.error('authorization policy not reloaded; the previous one stays in force', { error: (err as Error).message });
    }
  }

  /** Start-up log fields describing the access control in force. */
  describe(): Record<string, unknown> {
    if (!this.policy) return { access: 'unix socket mode 0660' };
    return { access: 'mutual TLS', authzFile: this.opts.authzFile, ...this.policy.summary() };
  }
}
