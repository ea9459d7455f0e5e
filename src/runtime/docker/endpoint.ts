// Turns a Docker endpoint URI into dockerode connection options.
import type Dockerode from 'dockerode';
import { AgentError } from '../../errors.js';

/**
 * Connection options for `unix:///path` (or a bare absolute path), `tcp://host:port` and `http://host:port`.
 * Every transport field is set explicitly so DOCKER_HOST and DOCKER_TLS_VERIFY in the environment cannot
 * redirect the agent to another daemon. Throws InvalidArgument for any other scheme.
 */
export function dockerodeOptions(endpoint: string): Dockerode.DockerOptions {
  const plain = { host: undefined, port: undefined, socketPath: undefined, ca: undefined, cert: undefined, key: undefined };
  if (endpoint.startsWith('/')) return { ...plain, socketPath: endpoint, protocol: 'http' };
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch (err) {
    throw new AgentError('InvalidArgument', `Docker endpoint "${endpoint}" is not a URI`, { cause: err });
  }
  switch (url.protocol) {
    case 'unix:':
      if (!url.pathname) throw new AgentError('InvalidArgument', `Docker endpoint "${endpoint}" has no socket path`);
      return { ...plain, socketPath: decodeURIComponent(url.pathname), protocol: 'http' };
    case 'tcp:':
    case 'http:':
      return { ...plain, host: url.hostname, port: url.port || '2375', protocol: 'http' };
    default:
      throw new AgentError('InvalidArgument', `Docker endpoint "${endpoint}": unsupported scheme ${url.protocol}`);
  }
}
