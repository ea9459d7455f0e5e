// Literal Docker Engine API JSON (dockerd 20.10, API 1.41) for the Docker adapter's unit tests, copied from the
// sandbox dockerd: a pause sandbox with --network none, an app container joined to it with a bind mount and an
// anonymous volume.
import type Dockerode from 'dockerode';

export const SANDBOX_ID = '9d8ecf341eb0fbacfd285d0a70dd479fe7bffb79173b2bb692758f1ef6f6c31f';
export const APP_ID = '8b11392b6f4d9eb3407c3bdcea8dc4d43aed9a093bb0ab48bad69557520de12b';
export const ANON_VOLUME = '6f30dc615f43c98a89868fc2d6856f25c258c38e20ecedcaa548223733f10d0b';

/** `GET /containers/{id}/json` of the app container; deep-copied, so tests may change it. */
export function appInspect(): Dockerode.ContainerInspectInfo {
  return structuredClone({
    Id: APP_ID,
    Created: '2026-11-29T16:13:59.795020874Z',
    Path: '/app/run.sh',
    Args: [],
    State: {
      Status: 'running',
      Running: true,
      Paused: false,
      Restarting: false,
      OOMKilled: false,
      Dead: false,
      Pid: 6406,
      ExitCode: 0,
      Error: '',
      StartedAt: '2026-11-29T16:13:59.909540923Z',
      FinishedAt: '0001-01-01T00:00:00Z',
    },
    Image: 'sha256:8e6c889ef9afd119ff362b09dc7eaf6aa01838dc27d3b437d7555cc3199431c4',
    ResolvConfPath: `/tmp/inplace-sandbox/docker/containers/${SANDBOX_ID}/resolv.conf`,
    HostnamePath: `/tmp/inplace-sandbox/docker/containers/${SANDBOX_ID}/hostname`,
    HostsPath: `/tmp/inplace-sandbox/docker/containers/${SANDBOX_ID}/hosts`,
    LogPath: `/tmp/inplace-sandbox/docker/containers/${APP_ID}/${APP_ID}-json.log`,
    Name: '/dk-a',
    RestartCount: 0,
    Driver: 'overlay2',
    Platform: 'linux',
    MountLabel: '',
    ProcessLabel: '',
    AppArmorProfile: '',
    ExecIDs: null,
    HostConfig: {
      Binds: ['/tmp/dk-shared:/shared'],
      ContainerIDFile: '',
      LogConfig: { Type: 'json-file', Config: {} },
      NetworkMode: `container:${SANDBOX_ID}`,
      PortBindings: {},
      RestartPolicy: { Name: 'on-failure', MaximumRetryCount: 3 },
      AutoRemove: false,
      VolumeDriver: '',
      VolumesFrom: null,
      CapAdd: null,
      CapDrop: null,
      CgroupnsMode: 'host',
      Dns: [],
      DnsOptions: [],
      DnsSearch: [],
      ExtraHosts: null,
      GroupAdd: null,
      IpcMode: 'private',
      Cgroup: '',
      Links: null,
      OomScoreAdj: 0,
      PidMode: '',
      Privileged: false,
      PublishAllPorts: false,
      ReadonlyRootfs: false,
      SecurityOpt: null,
      Tmpfs: { '/run': 'rw,size=1m' },
      UTSMode: '',
      UsernsMode: '',
      ShmSize: 67108864,
      Runtime: 'runc',
      ConsoleSize: [0, 0],
      Isolation: '',
      CpuShares: 0,
      Memory: 33554432,
      NanoCpus: 500000000,
      CgroupParent: '',
      Mounts: [{ Type: 'tmpfs', Target: '/scratch' }],
      MaskedPaths: ['/proc/asound', '/proc/kcore'],
      ReadonlyPaths: ['/proc/bus', '/proc/sys'],
    },
    GraphDriver: { Name: 'overlay2', Data: {} },
    Mounts: [
      { Type: 'bind', Source: '/tmp/dk-shared', Destination: '/shared', Mode: '', RW: true, Propagation: 'rprivate' },
      {
        Type: 'volume',
        Name: ANON_VOLUME,
        Source: `/tmp/inplace-sandbox/docker/volumes/${ANON_VOLUME}/_data`,
        Destination: '/data',
        Driver: 'local',
        Mode: '',
        RW: true,
        Propagation: '',
      },
      { Type: 'bind', Source: '/etc/app', Destination: '/config', Mode: 'ro', RW: false, Propagation: 'rprivate' },
      { Type: 'tmpfs', Source: '', Destination: '/scratch', Mode: '', RW: true, Propagation: '' },
    ],
    Config: {
      Hostname: '9d8ecf341eb0',
      Domainname: '',
      User: '',
      AttachStdin: false,
      AttachStdout: false,
      AttachStderr: false,
      Tty: false,
      OpenStdin: false,
      StdinOnce: false,
      Env: ['PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', 'APP_VERSION=v1', 'MODE=fast'],
      Cmd: null,
      Image: '127.0.0.1:5000/inplace/app:v1',
      Volumes: { '/data': {} },
      WorkingDir: '/app',
      Entrypoint: ['/app/run.sh'],
      OnBuild: null,
      Labels: {
        'org.opencontainers.image.title': 'inplace-app',
        'org.opencontainers.image.version': 'v1',
        team: 'blue',
        'annotation.example.com/owner': 'ops',
      },
      StopSignal: 'SIGTERM',
    },
    NetworkSettings: {
      Bridge: '',
      SandboxID: '',
      HairpinMode: false,
      Ports: {},
      SandboxKey: '',
      IPAddress: '',
      MacAddress: '',
      Networks: {},
    },
  }) as unknown as Dockerode.ContainerInspectInfo;
}

/** `Config` of the image app:v1 (image inspect). */
export function appV1ImageConfig(): Record<string, unknown> {
  return {
    Hostname: '',
    User: '',
    Env: ['PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', 'APP_VERSION=v1'],
    Cmd: null,
    Volumes: { '/data': {} },
    WorkingDir: '/app',
    Entrypoint: ['/app/run.sh'],
    Labels: { 'org.opencontainers.image.title': 'inplace-app', 'org.opencontainers.image.version': 'v1' },
  };
}

/** One `GET /containers/json?all=1` entry. */
export function summary(
  id: string,
  name: string,
  networkMode: string,
  extra: Partial<Dockerode.ContainerInfo> = {},
): Dockerode.ContainerInfo {
  return {
    Id: id,
    Names: [`/${name}`],
    Image: '127.0.0.1:5000/inplace/app:v1',
    ImageID: 'sha256:8e6c889ef9afd119ff362b09dc7eaf6aa01838dc27d3b437d7555cc3199431c4',
    Command: '/app/run.sh',
    Created: 1795968839,
    Ports: [],
    Labels: {},
    State: 'running',
    Status: 'Up 2 minutes',
    HostConfig: { NetworkMode: networkMode },
    NetworkSettings: { Networks: {} },
    Mounts: [],
    ...extra,
  };
}

/** The networks of a sandbox started with `--network none`. */
export const noneNetwork = {
  none: {
    NetworkID: '351390365e86609edd4c5dd90883012a1c4b9f5ce9a297a4f6aa953ada4f6ac6',
    EndpointID: 'f84d6281eb5b38682f30257a7d75002996fb8744f1ffb15c4c8250bb353540fc',
    Gateway: '',
    IPAddress: '',
    IPPrefixLen: 0,
    IPv6Gateway: '',
    GlobalIPv6Address: '',
    GlobalIPv6PrefixLen: 0,
    MacAddress: '',
  },
} as Dockerode.ContainerInfo['NetworkSettings']['Networks'];
