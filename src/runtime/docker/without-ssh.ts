// dockerode's transport (docker-modem) loads ssh2 when it is loaded, for ssh:// hosts, and ssh2 sets up a
// WebAssembly poly1305 with 16 MiB of memory as it loads: about 18 MiB of an idle agent's RSS for a transport
// the agent refuses (endpoint.ts takes unix, tcp and http only). Imported before dockerode, this module puts a
// stand-in for ssh2 in the CommonJS module cache, so docker-modem finds that instead of the real one.
import { createRequire } from 'node:module';
import { putStandIn } from '../../module-stand-in.js';

const fromDockerode = createRequire(createRequire(import.meta.url).resolve('dockerode'));
const fromModem = createRequire(fromDockerode.resolve('docker-modem'));

/** The ssh2 module as docker-modem will see it: a Client that refuses, since no ssh:// endpoint gets this far. */
export const ssh2StandIn = {
  Client: class {
    constructor() {
      throw new Error('inplace-agent does not connect to Docker over ssh://');
    }
  },
};

putStandIn(fromModem, 'ssh2', ssh2StandIn);
