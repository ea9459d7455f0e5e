// inplacectl's global flags and its session with the agent: the client built from them, every request with the
// --request-timeout deadline, and results printed as -o says.
import { Command, Option } from 'commander';
import { AgentClient, DEFAULT_AGENT_SOCKET } from '../api/client.js';
import { AgentError, asAgentError } from '../errors.js';
import { UsageError } from './args.js';
import { outputOption, structured, type OutputFormat } from './output.js';
import { noAnswer, requestTimeoutMs, requestTimeoutOption } from './request-timeout.js';

/** inplacectl's global flags. */
export interface Globals {
  agent: string;
  output: OutputFormat;
  cert?: string;
  key?: string;
  ca?: string;
  serverName?: string;
  kubeconfig?: string;
  context?: string;
  namespace?: string;
  requestTimeout: string;
}

/** Adds inplacectl's global flags to prog. */
export function addGlobalOptions(prog: Command): Command {
  return prog
    .addOption(new Option('--agent <uri>', 'agent API address').env('INPLACE_AGENT').default(DEFAULT_AGENT_SOCKET))
    .addOption(outputOption('output format (with json or yaml, errors come in that format too: see below)'))
    .addOption(new Option('--cert <file>', 'client certificate (PEM) for a TCP agent (mutual TLS)').env('INPLACECTL_CERT'))
    .addOption(new Option('--key <file>', 'private key (PEM) of --cert').env('INPLACECTL_KEY'))
    .addOption(new Option('--ca <file>', "CA certificate(s) (PEM) the agent's certificate must chain to").env('INPLACECTL_CA'))
    .addOption(new Option('--server-name <name>', "name the agent's certificate must carry (default: the host in --agent)").env('INPLACECTL_SERVER_NAME'))
    .addOption(requestTimeoutOption())
    .addOption(new Option('--kubeconfig <file>', 'kubeconfig for prewarm and rollout (default: $KUBECONFIG, then ~/.kube/config, then in-cluster); with restart, go through a ContainerRestart object instead of the agent socket'))
    .addOption(new Option('--context <name>', 'kubeconfig context (default: the current one); with restart, as --kubeconfig'))
    .addOption(new Option('-n, --namespace <ns>', "namespace of a POD given without one, and of rollouts (default: the context's, then default)"));
}

/** A client of the agent in g; bad TLS files are bad usage, found before anything is sent. */
function client(g: Globals): AgentClient {
  try {
    return new AgentClient(g.agent, requestTimeoutMs(g.requestTimeout), { cert: g.cert, key: g.key, ca: g.ca, serverName: g.serverName });
  } catch (err) {
    throw new UsageError(asAgentError(err).message);
  }
}

/** Prints a result: text as given, or value as -o json/yaml. */
export function print(g: Globals, value: unknown, text: string): void {
  process.stdout.write((g.output === 'text' ? text : structured(g.output, value)) + '\n');
}

/**
 * Runs fn with a client of the agent once it answers, and closes the client after it, however fn ends. An agent
 * that accepts the connection and does not answer within --request-timeout fails with one line; so does a request
 * that runs out of it.
 */
export async function withClient(g: Globals, fn: (c: AgentClient) => Promise<void>): Promise<void> {
  const c = client(g);
  const ms = requestTimeoutMs(g.requestTimeout);
  try {
    await c.waitReady(ms).catch((err: unknown) => {
      throw new AgentError('DeadlineExceeded', `${asAgentError(err).message} (--request-timeout)`);
    });
    await fn(c).catch((err: unknown) => {
      const e = asAgentError(err);
      // grpc-js's own deadline ("Deadline exceeded after 30.002s,LB pick: ..."), not an answer of the agent.
      if (e.kind === 'DeadlineExceeded' && /^Deadline exceeded after/.test(e.message)) throw noAnswer(`the agent at ${c.target}`, ms);
      throw err;
    });
  } finally {
    c.close();
  }
}
