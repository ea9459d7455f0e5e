// `inplacectl version`: the client's version first, then the agent's and its runtime's (as kubectl version prints
// the client's and then the server's, or says it cannot reach the server).
import type { Command } from 'commander';
import { AgentError, asAgentError } from '../errors.js';
import { PACKAGE_VERSION } from '../version.js';
import type { VersionResponse__Output } from '../gen/inplace/v1/VersionResponse.js';
import { jsonError } from './json-error.js';
import { exitStatusOf, isUsage } from './exit-codes.js';
import { print, withClient, type Globals } from './agent-session.js';

/** Adds `version` to inplacectl. */
export function addVersionCommand(prog: Command, globals: () => Globals): void {
  prog
    .command('version')
    .description("inplacectl's version, and the agent's and its runtime's (as kubectl version does)")
    .option('--client', "only inplacectl's version (no agent is asked)")
    .action(async (o: { client?: boolean }) => {
      const g = globals();
      const client = { version: PACKAGE_VERSION };
      // The client's version first, whatever becomes of the agent (kubectl version does the same).
      if (g.output === 'text') process.stdout.write(`Client Version: ${PACKAGE_VERSION}\n`);
      if (o.client) {
        if (g.output !== 'text') print(g, { client }, '');
        return;
      }
      try {
        await withClient(g, async (c) => {
          const v = await c.version();
          const agent = { version: v.version, api: v.api, runtime: v.runtime, runtimeName: v.runtimeName, runtimeVersion: v.runtimeVersion };
          const cluster = v.cluster ? { kubernetesVersion: v.cluster.kubernetesVersion, active: v.cluster.active, off: v.cluster.off, ...(v.cluster.unknown ? { unknown: v.cluster.unknown } : {}) } : undefined;
          print(g, { client, agent, ...(cluster ? { cluster } : {}) }, `Agent Version: ${v.version} (API ${v.api}, at ${c.target})\nRuntime: ${v.runtimeName} ${v.runtimeVersion} (${v.runtime})${clusterText(v.cluster)}`);
        });
      } catch (err) {
        const e = isUsage(err) ? new AgentError('InvalidArgument', err.message) : asAgentError(err);
        const code = exitStatusOf(err);
        process.stderr.write(`inplacectl: cannot get the agent's version: ${e.message}\n`);
        if (g.output !== 'text') print(g, { client, ...jsonError(e, code) }, '');
        process.exitCode = code;
      }
    });

}

/** The Kubernetes lines of `inplacectl version`: the cluster's version, then what is held at admission and what is off. */
function clusterText(c: VersionResponse__Output['cluster']): string {
  if (!c) return '';
  if (c.unknown) return `\nKubernetes: unknown (${c.unknown})`;
  const lines = [`\nKubernetes: ${c.kubernetesVersion}`];
  for (const a of c.active) lines.push(`  active: ${a}`);
  for (const o of c.off) lines.push(`  off:    ${o}`);
  return lines.join('\n');
}
