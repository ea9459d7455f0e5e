// The daemon's settings: command-line flags, each also settable as INPLACE_AGENT_<FLAG> in the environment.
import { DEFAULT_LEASE_NAMESPACE } from '../controllers/image-prewarm/types.js';
import { Command, Option } from 'commander';
import { parseBytes } from '../bytes.js';
import { durationFlagMs } from '../duration.js';
import { DEFAULT_RUNTIME_CALL_TIMEOUT } from '../runtime/call-deadline.js';
import { asAgentError } from '../errors.js';
import { parseHostPort } from '../host-port.js';
import { LOG_LEVELS, type LogFormat } from '../log.js';
import { DEFAULT_AGENT_SOCKET } from '../api/address.js';
import { DOCKER_SOCKET } from '../runtime/detect.js';
import { DEFAULT_PROXY_METRICS_URL } from '../kube/drain/kube-proxy-metrics.js';

/** Everything the daemon is configured with. */
export interface DaemonOptions {
  runtime: 'auto' | 'cri' | 'docker';
  /** How long the runtime may take to answer its first call at start (a socket that accepts and never answers). */
  runtimeTimeoutMs: number;
  /** Deadline of each runtime call after start-up, ms (0: none; a stop adds its grace period, an exec its timeout). */
  runtimeCallTimeoutMs: number;
  /** Deadline of each Kubernetes API request (not watches), ms (0: none). */
  kubeRequestTimeoutMs: number;
  criEndpoint?: string;
  dockerHost?: string;
  containerdAddress?: string;
  listen: string;
  /** Group (name or gid) that may use the agent's socket. */
  socketGroup?: string;
  /** Mutual TLS of a TCP --listen: the agent's certificate and key, and the CA client certificates must chain to. */
  tlsCert?: string;
  tlsKey?: string;
  clientCa?: string;
  /** Which client certificate names may read, pull, restart and cancel (TCP only). */
  authzFile?: string;
  stateDir: string;
  metricsAddr?: string;
  logLevel: string;
  logFormat: LogFormat;
  maxParallelPulls: number;
  pullRetries: number;
  pullStallTimeoutMs: number;
  pullTimeoutMs: number;
  minFreeDiskBytes: number;
  authFile?: string;
  prewarmFile?: string;
  prewarmIntervalMs: number;
  prewarmPin: boolean;
  defaultGraceSeconds: number;
  defaultMinReadyMs: number;
  defaultTimeoutMs: number;
  retention: number;
  /** /healthz fails once the runtime has not answered for this long. */
  livenessRuntimeTimeoutMs: number;
  /** Kubernetes mode: the kubeconfig file (else in-cluster; $KUBECONFIG is not read). */
  kubeconfig?: string;
  /** Kubernetes mode: this node's name (default $NODE_NAME). */
  nodeName?: string;
  /** Kubernetes mode: handle ContainerRestart objects of this namespace only (default: all). */
  watchNamespace?: string;
  /** Kubernetes mode: ContainerRestarts may name standalone sandboxes, pods no API server knows (default: refused). */
  containerRestartStandalonePods: boolean;
  /** Restart operations executing at once; the rest wait Pending. */
  maxParallelOperations: number;
  /** Longest wait for running operations on SIGTERM before exiting (they resume at the next start), ms. */
  drainTimeoutMs: number;
  /** Kubernetes mode: kube-proxy's metrics address, read to see the data plane apply a drain ('' : not read). */
  proxyMetricsUrl: string;
  /** Kubernetes mode: wait after the slices let an address go when the data plane cannot be observed, ms. */
  drainSettleMs: number;
  /**
   * Kubernetes mode: which Events a restart records on its pod. `kubelet`: only where the kubelet would record
   * one (the agent's own stop, its own pulls, every failure); `all` adds Draining and Restarted.
   */
  podEvents: 'kubelet' | 'all';
  /** Fleet pre-warm (ImagePrewarm objects) in Kubernetes mode. */
  fleetPrewarm: boolean;
  /** Namespace of the fleet pre-warm's slot Leases. */
  fleetNamespace: string;
  fleetLeaseMs: number;
  fleetPollMs: number;
  fleetBackoffMs: number;
  /** Most bytes of pinned images ImagePrewarm pins may bring the node to (0: no cap). */
  maxPinnedBytes: number;
  /** InPlaceRollouts: take part in the coordinator election (Kubernetes mode). */
  rollouts: boolean;
  /** The rollout coordination Lease's duration: a dead coordinator is replaced after this. */
  rolloutLeaseMs: number;
}

/** A bad flag value or environment variable: bad usage, exit 2 (as an unknown flag or a bad choice). */
export class DaemonUsageError extends Error {}

/** The environment variable that sets a flag: INPLACE_AGENT_<FLAG>. */
export function envName(flag: string): string {
  return `INPLACE_AGENT_${flag.toUpperCase().replace(/-/g, '_')}`;
}

/**
 * An on/off setting from its environment variable: true/false/1/0 in any case; anything else (the empty string
 * included) is refused naming the variable. `name` is the setting's positive name (`fleet-prewarm` for
 * --no-fleet-prewarm), so INPLACE_AGENT_FLEET_PREWARM=true means on.
 */
export function parseEnvBoolean(name: string, value: string): boolean {
  const v = value.trim().toLowerCase();
  if (v === 'true' || v === '1') return true;
  if (v === 'false' || v === '0') return false;
  throw new DaemonUsageError(`${envName(name)} must be true, false, 1 or 0, got "${value}"`);
}

/** The agent's default deadline of one API request, --kube-request-timeout (kubectl's is 0, none; inplacectl's 30 s). */
const DEFAULT_KUBE_REQUEST_TIMEOUT = '60s';

/** The daemon's command line, with defaults and environment fallbacks. */
export function daemonCommand(version: string): Command {
  const opt = (flags: string, desc: string, name: string) => new Option(flags, desc).env(envName(name));
  return new Command('inplace-agent')
    .description('Node agent: restarts one container of a pod in place (CRI or Docker) and pre-pulls images')
    .version(version)
    .addOption(opt('--runtime <kind>', 'container runtime', 'runtime').choices(['auto', 'cri', 'docker']).default('auto'))
    .addOption(opt('--runtime-timeout <duration>', 'at start, fail when the runtime socket does not answer within this long (one line naming the socket)', 'runtime-timeout').default('10s'))
    .addOption(opt('--runtime-call-timeout <duration>', 'after start, fail a runtime call that has no answer after this long (a stop: plus its grace period; 0: wait forever)', 'runtime-call-timeout').default(DEFAULT_RUNTIME_CALL_TIMEOUT))
    .addOption(opt('--cri-endpoint <uri>', 'CRI socket (default: auto-detect containerd, CRI-O, cri-dockerd)', 'cri-endpoint'))
    .addOption(opt('--docker-host <uri>', `Docker Engine socket (default ${DOCKER_SOCKET})`, 'docker-host'))
    .addOption(opt('--containerd-address <path>', 'containerd socket for byte-level pull progress (default: the CRI endpoint when it is containerd)', 'containerd-address'))
    .addOption(opt('--listen <uri>', 'agent API address', 'listen').default(DEFAULT_AGENT_SOCKET))
    .addOption(opt('--socket-group <group>', 'group (name or gid) whose members may use the agent socket (mode 0660)', 'socket-group'))
    .addOption(opt('--tls-cert <file>', 'the agent\'s certificate (PEM) for a TCP --listen (mutual TLS is required on TCP)', 'tls-cert'))
    .addOption(opt('--tls-key <file>', 'the private key (PEM) of --tls-cert', 'tls-key'))
    .addOption(opt('--client-ca <file>', 'CA certificates (PEM) that client certificates must chain to', 'client-ca'))
    .addOption(opt('--authz-file <file>', 'JSON policy: which client certificate names may read, pull, restart, cancel (TCP; reloaded on SIGHUP)', 'authz-file'))
    .addOption(opt('--state-dir <dir>', 'journal and state directory', 'state-dir').default('/var/lib/inplace-agent'))
    .addOption(opt('--metrics-addr <host:port>', 'serve /metrics, /healthz, /readyz here', 'metrics-addr'))
    .addOption(opt('--liveness-runtime-timeout <duration>', '/healthz fails once the runtime has not answered for this long', 'liveness-runtime-timeout').default('3m'))
    .addOption(opt('--log-level <level>', 'log level', 'log-level').choices(LOG_LEVELS).default('info'))
    .addOption(opt('--log-format <format>', 'log format', 'log-format').choices(['json', 'text']).default('text'))
    .addOption(opt('--max-parallel-pulls <n>', 'node-wide concurrent image pulls (at least 1)', 'max-parallel-pulls').default('2'))
    .addOption(opt('--pull-retries <n>', 'retries of a pull that can heal', 'pull-retries').default('3'))
    .addOption(opt('--pull-stall-timeout <duration>', 'fail a pull that receives no bytes this long (not while unpacking)', 'pull-stall-timeout').default('60s'))
    .addOption(opt('--pull-timeout <duration>', 'overall deadline of one image pull', 'pull-timeout').default('30m'))
    .addOption(opt('--min-free-disk <bytes>', 'refuse pulls when the image filesystem has less free space (e.g. 1Gi, 500Mi)', 'min-free-disk').default('1Gi'))
    .addOption(opt('--auth-file <file>', 'node-wide registry credentials, Docker config.json style (a request\'s own win)', 'auth-file'))
    .addOption(opt('--prewarm <file>', 'keep the images listed in FILE (one per line) pulled on this node', 'prewarm'))
    .addOption(opt('--prewarm-interval <duration>', 'how often the --prewarm list is read and pulled again (0: once at start)', 'prewarm-interval').default('10m'))
    .addOption(opt('--prewarm-pin', 'protect prewarmed images from the kubelet\'s image GC where the runtime supports it', 'prewarm-pin'))
    .addOption(opt('--grace <duration>', 'default grace period of a restart', 'grace').default('30s'))
    .addOption(opt('--min-ready <duration>', 'default time a replacement must keep running', 'min-ready').default('1s'))
    .addOption(opt('--operation-timeout <duration>', 'default overall deadline of a restart', 'operation-timeout').default('10m'))
    .addOption(opt('--retention <n>', 'finished operations kept', 'retention').default('500'))
    .addOption(opt('--kubeconfig <file>', 'Kubernetes mode with this kubeconfig (default: in-cluster when run in a cluster; $KUBECONFIG is not read)', 'kubeconfig'))
    .addOption(opt('--kube-request-timeout <duration>', 'Kubernetes mode: abort an API request (not a watch) that has no answer after this long (0: wait forever)', 'kube-request-timeout').default(DEFAULT_KUBE_REQUEST_TIMEOUT))
    .addOption(opt('--node-name <name>', 'this node\'s name in Kubernetes mode (default $NODE_NAME)', 'node-name'))
    .addOption(opt('--watch-namespace <ns>', 'Kubernetes mode: handle ContainerRestart objects of this namespace only (default: all)', 'watch-namespace'))
    .addOption(opt('--container-restart-standalone-pods', 'Kubernetes mode: let ContainerRestarts and RPC restarts name sandboxes without a kubelet\'s labels, pods no API server knows (a ContainerRestart\'s creator has its rights checked on a pod that does not exist)', 'container-restart-standalone-pods'))
    .addOption(opt('--max-parallel-operations <n>', 'restart operations executing at once (the rest wait Pending)', 'max-parallel-operations').default('4'))
    .addOption(opt('--drain-timeout <duration>', 'on SIGTERM, exit within this long whatever is still waiting; running operations get what is left of it (they resume at the next start)', 'drain-timeout').default('90s'))
    .addOption(opt('--proxy-metrics-url <url>', 'Kubernetes mode: kube-proxy\'s metrics address; a drain waits until it has applied the change ("none": not read, the settle time is used)', 'proxy-metrics-url').default(DEFAULT_PROXY_METRICS_URL))
    .addOption(opt('--drain-settle <duration>', 'Kubernetes mode: wait after the EndpointSlices let a pod go when kube-proxy cannot be read (eBPF data planes, no metrics)', 'drain-settle').default('2s'))
    .addOption(opt('--pod-events <which>', 'Kubernetes mode: Events a restart records on its pod ("kubelet": only where the kubelet would record one, the agent\'s own stops and pulls and every failure; "all": also Draining and Restarted)', 'pod-events').choices(['kubelet', 'all']).default('kubelet'))
    .addOption(opt('--no-fleet-prewarm', 'in Kubernetes mode, do not take part in ImagePrewarm fleet pre-warms', 'fleet-prewarm'))
    .addOption(opt('--fleet-namespace <ns>', 'namespace of the fleet pre-warm slot Leases (default: $POD_NAMESPACE, then inplace-system)', 'fleet-namespace'))
    .addOption(opt('--fleet-lease-duration <duration>', 'fleet pre-warm slot lease duration (a dead holder frees its slot after this)', 'fleet-lease-duration').default('15s'))
    .addOption(opt('--fleet-poll <duration>', 'how often a waiting node looks for a free slot', 'fleet-poll').default('3s'))
    .addOption(opt('--fleet-backoff <duration>', 'first back-off after a failed fleet pull attempt (doubles, at most 5m)', 'fleet-backoff').default('10s'))
    .addOption(opt('--max-pinned-bytes <bytes>', 'refuse an ImagePrewarm pin that would take the images pinned on this node over this many bytes (0: no cap)', 'max-pinned-bytes').default('10Gi'))
    .addOption(opt('--no-rollouts', 'in Kubernetes mode, never coordinate InPlaceRollouts or SidecarSet upgrades (this node\'s pods are still updated through their ContainerRestarts)', 'rollouts'))
    .addOption(opt('--rollout-lease-duration <duration>', 'rollout coordination Lease duration (another agent takes over this long after the coordinator is gone)', 'rollout-lease-duration').default('15s'));
}

/**
 * How daemonOptions reads a flag's value: each reader checks it and throws DaemonUsageError naming where the
 * bad value came from (the flag, or the environment variable that set it).
 */
function flagReaders(cmd: Command) {
  // Where a bad value came from: the flag, or the environment variable that set it.
  const source = (name: string) => {
    const key = name.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
    return cmd.getOptionValueSource(key) === 'env' ? `${envName(name)} (--${name})` : `--${name}`;
  };
  // An on/off flag: the flag when given; else its variable, read by its value (commander would take a set
  // variable as "given", so that INPLACE_AGENT_FLEET_PREWARM=true turned the fleet pre-warm off).
  const onOff = (name: string, v: unknown) => {
    const key = name.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
    if (cmd.getOptionValueSource(key) !== 'env') return Boolean(v);
    return parseEnvBoolean(name, process.env[envName(name)] ?? '');
  };
  const int = (name: string, v: string | undefined, min = 0) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < min) throw new DaemonUsageError(`${source(name)} must be a whole number${min > 0 ? ` of at least ${min}` : ''}, got "${v}"`);
    return n;
  };
  // One rule for every duration flag (src/duration.ts); 0 is allowed only where it means "off".
  const timeout = (name: string, v: string | undefined, zeroMeans?: string) => {
    try {
      return durationFlagMs(source(name), v as string, { zeroMeans });
    } catch (err) {
      throw new DaemonUsageError(asAgentError(err).message);
    }
  };
  const hostPort = (name: string, v: string | undefined) => {
    if (v === undefined) return undefined;
    try {
      parseHostPort(v);
    } catch (err) {
      throw new DaemonUsageError(`${source(name)}: ${(err as Error).message}`);
    }
    return v;
  };
  const bytes = (name: string, v: string | undefined) => {
    try {
      return parseBytes(v as string);
    } catch (err) {
      throw new DaemonUsageError(`${source(name)}: ${asAgentError(err).message}`);
    }
  };
  return { source, onOff, int, timeout, hostPort, bytes };
}

/** Settings from a parsed command. */
export function daemonOptions(cmd: Command): DaemonOptions {
  const o = cmd.opts<Record<string, string | undefined>>();
  const { source, onOff, int, timeout, hostPort, bytes } = flagReaders(cmd);
  return {
    runtime: o.runtime as DaemonOptions['runtime'],
    runtimeTimeoutMs: timeout('runtime-timeout', o.runtimeTimeout),
    runtimeCallTimeoutMs: timeout('runtime-call-timeout', o.runtimeCallTimeout, 'no deadline'),
    criEndpoint: o.criEndpoint,
    dockerHost: o.dockerHost,
    containerdAddress: o.containerdAddress,
    listen: o.listen as string,
    socketGroup: o.socketGroup,
    tlsCert: o.tlsCert,
    tlsKey: o.tlsKey,
    clientCa: o.clientCa,
    authzFile: o.authzFile,
    stateDir: o.stateDir as string,
    metricsAddr: hostPort('metrics-addr', o.metricsAddr),
    livenessRuntimeTimeoutMs: timeout('liveness-runtime-timeout', o.livenessRuntimeTimeout),
    logLevel: o.logLevel as string,
    logFormat: o.logFormat as LogFormat,
    maxParallelPulls: int('max-parallel-pulls', o.maxParallelPulls, 1),
    pullRetries: int('pull-retries', o.pullRetries),
    pullStallTimeoutMs: timeout('pull-stall-timeout', o.pullStallTimeout, 'no stall deadline'),
    pullTimeoutMs: timeout('pull-timeout', o.pullTimeout),
    minFreeDiskBytes: bytes('min-free-disk', o.minFreeDisk),
    authFile: o.authFile,
    prewarmFile: o.prewarm,
    prewarmIntervalMs: timeout('prewarm-interval', o.prewarmInterval, 'once at start'),
    prewarmPin: onOff('prewarm-pin', o.prewarmPin),
    defaultGraceSeconds: Math.ceil(timeout('grace', o.grace, 'kill at once') / 1000),
    defaultMinReadyMs: timeout('min-ready', o.minReady, 'no verification window'),
    defaultTimeoutMs: timeout('operation-timeout', o.operationTimeout),
    retention: int('retention', o.retention),
    kubeconfig: o.kubeconfig,
    kubeRequestTimeoutMs: timeout('kube-request-timeout', o.kubeRequestTimeout, 'no deadline'),
    nodeName: o.nodeName ?? (process.env.NODE_NAME || undefined),
    watchNamespace: o.watchNamespace,
    containerRestartStandalonePods: onOff('container-restart-standalone-pods', o.containerRestartStandalonePods),
    maxParallelOperations: Math.max(1, int('max-parallel-operations', o.maxParallelOperations)),
    drainTimeoutMs: timeout('drain-timeout', o.drainTimeout, 'exit without waiting'),
    proxyMetricsUrl: proxyUrl(source('proxy-metrics-url'), o.proxyMetricsUrl as string),
    drainSettleMs: timeout('drain-settle', o.drainSettle, 'no settle time'),
    podEvents: o.podEvents === 'all' ? 'all' : 'kubelet',
    fleetPrewarm: onOff('fleet-prewarm', o.fleetPrewarm),
    fleetNamespace: o.fleetNamespace ?? process.env.POD_NAMESPACE ?? DEFAULT_LEASE_NAMESPACE,
    fleetLeaseMs: Math.max(1000, timeout('fleet-lease-duration', o.fleetLeaseDuration)),
    fleetPollMs: timeout('fleet-poll', o.fleetPoll),
    fleetBackoffMs: timeout('fleet-backoff', o.fleetBackoff),
    maxPinnedBytes: bytes('max-pinned-bytes', o.maxPinnedBytes),
    rollouts: onOff('rollouts', o.rollouts),
    rolloutLeaseMs: Math.max(3000, timeout('rollout-lease-duration', o.rolloutLeaseDuration)),
  };
}

/** The --proxy-metrics-url value checked: an http(s) URL, or '' for "none". */
function proxyUrl(source: string, v: string): string {
  if (v === 'none' || v === '') return '';
  let u: URL;
  try {
    u = new URL(v);
  } catch {
    throw new DaemonUsageError(`${source} must be an http:// URL or "none", got "${v}"`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new DaemonUsageError(`${source} must be an http:// URL or "none", got "${v}"`);
  return v;
}
