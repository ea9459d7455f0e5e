// The body of `POST /containers/create` that recreates a container from its inspect JSON (pure).
//
// Docker's inspect shows the container's config merged with its image's defaults, and some fields the daemon
// filled in itself. Sending it back as it is would fail or pin the old image's defaults, so:
//   - spec fields the caller changed (image, command, args, env, working dir, labels/annotations) are applied;
//   - when the image changes (by id: a re-pulled tag counts), values equal to the old image's defaults
//     (entrypoint+cmd, env entries, labels, working dir, user, volumes, exposed ports, healthcheck, stop
//     signal) are dropped so that the new image's apply;
//   - with NetworkMode `container:<sandbox>` the fields Docker rejects or the sandbox owns (hostname, domain
//     name, MAC address, exposed/published ports, DNS, extra hosts, links) are cleared;
//   - every bind and volume mount in inspect's `Mounts` (anonymous volumes by their generated name) becomes a
//     `HostConfig.Binds` entry, so the new container sees the same data; HostConfig.Mounts keeps only tmpfs
//     entries and VolumesFrom is cleared, since both are already covered by those binds.
import type Dockerode from 'dockerode';
import { podmanEndpoints, ulimitName } from './podman-compat.js';
import type { ContainerSpec } from '../types.js';
import { argvFromDocker, envToDocker, joinLabels, specFromInspect, type DockerMount } from './convert.js';

/** Image defaults that a container inherits (the `Config` of an image inspect). */
export interface ImageDefaults {
  Env?: string[] | null;
  Cmd?: string[] | null;
  Entrypoint?: string | string[] | null;
  WorkingDir?: string | null;
  User?: string | null;
  Labels?: Record<string, string> | null;
  Volumes?: Record<string, unknown> | null;
  ExposedPorts?: Record<string, unknown> | null;
  Healthcheck?: unknown;
  StopSignal?: string | null;
}

/** What createOptions needs beyond the spec. */
export interface CreateTarget {
  /** Sandbox id of the pod; the container's own id (in native) for a pod of one. */
  podId: string;
  /** Container name to create under; Docker picks one when absent. */
  name?: string;
  /** Whether the new container runs another image (by id) than the inspected one; default: the references differ. */
  imageChanged?: boolean;
  /** The defaults of the image the inspected container runs, when known. */
  oldImage?: ImageDefaults;
  /** Which engine serves the API; where they differ (Podman's networks) the body follows it. Default dockerd. */
  engine?: DockerEngine;
}

/** The engine behind a Docker Engine API. */
export type DockerEngine = 'dockerd' | 'podman';

function sameArray(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

function sameRecord(a: Record<string, string>, b: Record<string, string>): boolean {
  const ka = Object.keys(a);
  return ka.length === Object.keys(b).length && ka.every((k) => Object.hasOwn(b, k) && a[k] === b[k]);
}

/** `HostConfig.Binds` entry for one inspected mount; undefined for mounts binds cannot express. */
export function bindFromMount(m: DockerMount): string | undefined {
  let source: string | undefined;
  const opts: string[] = [];
  if (m.Type === 'bind') {
    source = m.Source;
    if (m.Propagation && m.Propagation !== 'rprivate') opts.push(m.Propagation);
  } else if (m.Type === 'volume') {
    source = m.Name;
    if (m.Mode.split(',').includes('nocopy')) opts.push('nocopy');
  }
  if (!source) return undefined;
  if (!m.RW) opts.push('ro');
  for (const label of ['z', 'Z']) if (m.Mode.split(',').includes(label)) opts.push(label);
  return opts.length > 0 ? `${source}:${m.Destination}:${opts.join(',')}` : `${source}:${m.Destination}`;
}

/** Drops the values a container inherited from its old image, so that a new image's defaults apply. */
function dropImageDefaults(config: Dockerode.ContainerCreateOptions, image: ImageDefaults): void {
  const entrypoint = argvFromDocker(config.Entrypoint);
  if (sameArray(entrypoint, argvFromDocker(image.Entrypoint))) {
    delete config.Entrypoint;
    if (sameArray(config.Cmd ?? [], image.Cmd ?? [])) delete config.Cmd;
  }
  const inherited = new Set(image.Env ?? []);
  config.Env = (config.Env ?? []).filter((e) => !inherited.has(e));
  const labels = { ...(config.Labels ?? {}) };
  for (const [k, v] of Object.entries(image.Labels ?? {})) if (labels[k] === v) delete labels[k];
  config.Labels = labels;
  if (config.WorkingDir === (image.WorkingDir ?? '')) delete config.WorkingDir;
  if (config.User === (image.User ?? '')) delete config.User;
  if (config.StopSignal && config.StopSignal === image.StopSignal) delete config.StopSignal;
  if (image.Healthcheck && JSON.stringify(config.Healthcheck) === JSON.stringify(image.Healthcheck)) {
    delete config.Healthcheck;
  }
  for (const key of ['Volumes', 'ExposedPorts'] as const) {
    const own = { ...(config[key] ?? {}) };
    for (const k of Object.keys(image[key] ?? {})) delete own[k];
    config[key] = own;
  }
}

/** The create body for a new instance of the inspected container `native`, changed as `spec` says. */
export function createOptions(
  native: Dockerode.ContainerInspectInfo,
  spec: ContainerSpec,
  target: CreateTarget,
): Dockerode.ContainerCreateOptions {
  const was = specFromInspect(native);
  const config: Dockerode.ContainerCreateOptions = structuredClone(native.Config) as Dockerode.ContainerCreateOptions;
  const host: Dockerode.HostConfig = structuredClone(native.HostConfig);

  if (!sameArray(spec.command, was.command)) {
    config.Entrypoint = [...spec.command];
    config.Cmd = [...spec.args];
  }
  if (!sameArray(spec.args, was.args)) config.Cmd = [...spec.args];
  const env = envToDocker(spec.env);
  if (!sameArray(env, envToDocker(was.env))) config.Env = env;
  if (spec.workingDir !== was.workingDir) config.WorkingDir = spec.workingDir;
  if (!sameRecord(spec.labels, was.labels) || !sameRecord(spec.annotations, was.annotations)) {
    config.Labels = joinLabels(spec.labels, spec.annotations);
  }
  const imageChanged = target.imageChanged ?? spec.image !== native.Config.Image;
  if (imageChanged && target.oldImage) dropImageDefaults(config, target.oldImage);
  config.Image = spec.image;

  const joins = target.podId !== native.Id;
  if (joins) host.NetworkMode = `container:${target.podId}`;
  if (host.NetworkMode?.startsWith('container:')) {
    delete config.Hostname;
    delete config.Domainname;
    delete config.MacAddress;
    delete config.ExposedPorts;
    for (const key of ['Dns', 'DnsSearch', 'DnsOptions', 'ExtraHosts', 'Links', 'PortBindings'] as const) {
      delete host[key];
    }
    host.PublishAllPorts = false;
  } else if (config.Hostname === native.Id.slice(0, 12)) {
    delete config.Hostname; // generated by Docker from the old id
  }

  const mounts = (native.Mounts ?? []) as DockerMount[];
  host.Binds = mounts.map(bindFromMount).filter((b): b is string => b !== undefined);
  host.Mounts = (host.Mounts ?? []).filter((m) => m.Type === 'tmpfs');
  host.VolumesFrom = null;

  if (host.Ulimits) host.Ulimits = host.Ulimits.map((u) => (u.Name ? { ...u, Name: ulimitName(u.Name) } : u));

  // Never sent back: Docker fills them in from its own state.
  delete (host as { ContainerIDFile?: string }).ContainerIDFile;
  config.HostConfig = host;
  // A container on a network of its own keeps its endpoint settings there (static IP, aliases, links);
  // further networks are connected after create (see extraNetworks). Podman takes them all at create, each
  // asking for the address the old container holds (its inspect does not say which were asked for).
  const podman = target.engine === 'podman' ? podmanNetworks(native) : undefined;
  const primary = podman ? undefined : primaryNetwork(native);
  if (podman) config.NetworkingConfig = { EndpointsConfig: podman };
  else if (primary) config.NetworkingConfig = { EndpointsConfig: { [primary.name]: endpointSettings(native, primary.settings) } };
  if (target.name !== undefined) config.name = target.name;
  return config;
}

/** Endpoint settings of a network the inspected container is on, to give the new container. */
export type EndpointSettings = NonNullable<NonNullable<Dockerode.ContainerCreateOptions['NetworkingConfig']>['EndpointsConfig']>[string];

type InspectedEndpoint = Dockerode.ContainerInspectInfo['NetworkSettings']['Networks'][string];

/** The network NetworkMode names, when the container has a network of its own (not none, host or container:). */
function primaryNetwork(native: Dockerode.ContainerInspectInfo): { name: string; settings: InspectedEndpoint } | undefined {
  const mode = native.HostConfig.NetworkMode ?? '';
  if (mode === '' || mode === 'none' || mode === 'host' || mode.startsWith('container:')) return undefined;
  const networks = native.NetworkSettings?.Networks ?? {};
  const name = mode === 'default' ? 'bridge' : mode;
  if (networks[name]) return { name, settings: networks[name] };
  // Started with `--network <id>`: Networks is keyed by name, so match the id.
  const byId = Object.entries(networks).find(([, e]) => e.NetworkID && (e.NetworkID === mode || e.NetworkID.startsWith(mode)));
  return byId ? { name: byId[0], settings: byId[1] } : undefined;
}

/** What to create the endpoint with: the user's settings, without what Docker derived from the old container. */
function endpointSettings(native: Dockerode.ContainerInspectInfo, e: InspectedEndpoint): EndpointSettings {
  const shortId = native.Id.slice(0, 12);
  const out: EndpointSettings = {};
  const ipam = (e as { IPAMConfig?: EndpointSettings['IPAMConfig'] }).IPAMConfig;
  if (ipam && (ipam.IPv4Address || ipam.IPv6Address || (ipam.LinkLocalIPs ?? []).length > 0)) out.IPAMConfig = ipam;
  const aliases = (e.Aliases ?? []).filter((a: string) => a !== shortId && a !== native.Id);
  if (aliases.length > 0) out.Aliases = aliases;
  if ((e.Links ?? []).length > 0) out.Links = e.Links;
  const driverOpts = (e as { DriverOpts?: Record<string, string> | null }).DriverOpts;
  if (driverOpts && Object.keys(driverOpts).length > 0) out.DriverOpts = driverOpts;
  return out;
}

/** A Podman container's endpoints for its replacement: each network's settings with the address held now. */
function podmanNetworks(native: Dockerode.ContainerInspectInfo): Record<string, EndpointSettings> | undefined {
  const networks = native.NetworkSettings?.Networks ?? {};
  const endpoints = podmanEndpoints(native.Name.replace(/^\//, ''), native.HostConfig.NetworkMode ?? '', networks);
  if (!endpoints) return undefined;
  return Object.fromEntries(endpoints.map((e) => [e.name, { ...endpointSettings(native, networks[e.name]!), IPAMConfig: e.ipam }]));
}

/** Networks besides the primary one the inspected container is on, with their settings, to connect after create. */
export function extraNetworks(native: Dockerode.ContainerInspectInfo, engine: DockerEngine = 'dockerd'): { name: string; settings: EndpointSettings }[] {
  if (engine === 'podman' && podmanNetworks(native)) return []; // all given at create
  const primary = primaryNetwork(native);
  if (!primary) return [];
  return Object.entries(native.NetworkSettings?.Networks ?? {})
    .filter(([name]) => name !== primary.name)
    .map(([name, e]) => ({ name, settings: endpointSettings(native, e) }));
}
