import assert from 'node:assert/strict';
import type Dockerode from 'dockerode';
import { AgentError } from '../../src/errors.js';
import { specFromInspect } from '../../src/runtime/docker/convert.js';
import { bindFromMount, createOptions, extraNetworks, type ImageDefaults } from '../../src/runtime/docker/create-options.js';
import { ANON_VOLUME, APP_ID, SANDBOX_ID, appInspect, appV1ImageConfig } from '../support/docker-json.js';

const NEW_SANDBOX = 'e'.repeat(64);

describe('Docker create body from an inspected container', () => {
  it('recreates the same container: same config, joined to the pod, every mount as a bind', () => {
    const info = appInspect();
    const body = createOptions(info, specFromInspect(info), { podId: SANDBOX_ID, name: 'dk-a-next' });
    assert.equal(body.name, 'dk-a-next');
    assert.equal(body.Image, '127.0.0.1:5000/inplace/app:v1');
    assert.deepEqual(body.Entrypoint, ['/app/run.sh']);
    assert.equal(body.Cmd, null);
    assert.deepEqual(body.Env, info.Config.Env);
    assert.deepEqual(body.Labels, info.Config.Labels);
    assert.equal(body.WorkingDir, '/app');
    assert.equal(body.StopSignal, 'SIGTERM');
    const host = body.HostConfig!;
    assert.equal(host.NetworkMode, `container:${SANDBOX_ID}`);
    assert.deepEqual(host.Binds, ['/tmp/dk-shared:/shared', `${ANON_VOLUME}:/data`, '/etc/app:/config:ro']);
    assert.deepEqual(host.Mounts, [{ Type: 'tmpfs', Target: '/scratch' }], 'only tmpfs mounts remain: the rest are binds now');
    assert.equal(host.VolumesFrom, null);
    assert.deepEqual(host.Tmpfs, { '/run': 'rw,size=1m' });
    assert.deepEqual(host.RestartPolicy, { Name: 'on-failure', MaximumRetryCount: 3 });
    assert.equal(host.Memory, 33554432);
    assert.equal(host.NanoCpus, 500000000);
    assert.equal((host as { ContainerIDFile?: string }).ContainerIDFile, undefined);
  });

  it('drops what Docker rejects with NetworkMode container:<id> (hostname, MAC, ports, DNS, hosts, links)', () => {
    const info = appInspect();
    Object.assign(info.Config, { Domainname: 'x', MacAddress: '02:42:ac:11:00:02', ExposedPorts: { '80/tcp': {} } });
    Object.assign(info.HostConfig, {
      Dns: ['1.1.1.1'],
      DnsSearch: ['a'],
      DnsOptions: ['ndots:1'],
      ExtraHosts: ['h:1.2.3.4'],
      Links: ['/x:/dk-a/x'],
      PortBindings: { '80/tcp': [{ HostPort: '8080' }] },
      PublishAllPorts: true,
    });
    const body = createOptions(info, specFromInspect(info), { podId: SANDBOX_ID });
    for (const key of ['Hostname', 'Domainname', 'MacAddress', 'ExposedPorts', 'name'] as const) {
      assert.equal(body[key], undefined, key);
    }
    const host = body.HostConfig!;
    for (const key of ['Dns', 'DnsSearch', 'DnsOptions', 'ExtraHosts', 'Links', 'PortBindings'] as const) {
      assert.equal(host[key], undefined, key);
    }
    assert.equal(host.PublishAllPorts, false);
  });

  it('does not change the inspect JSON it is given', () => {
    const info = appInspect();
    const before = JSON.stringify(info);
    createOptions(info, { ...specFromInspect(info), image: 'other:1', args: ['x'] }, { podId: NEW_SANDBOX });
    assert.equal(JSON.stringify(info), before);
  });

  it('joins the pod it is told to, by id', () => {
    const info = appInspect();
    const body = createOptions(info, specFromInspect(info), { podId: NEW_SANDBOX });
    assert.equal(body.HostConfig!.NetworkMode, `container:${NEW_SANDBOX}`);
  });

  it('keeps its own network for a pod of one, dropping only the hostname Docker derived from the old id', () => {
    const info = appInspect();
    info.HostConfig.NetworkMode = 'bridge';
    info.Config.Hostname = APP_ID.slice(0, 12);
    info.Config.ExposedPorts = { '80/tcp': {} };
    let body = createOptions(info, specFromInspect(info), { podId: APP_ID });
    assert.equal(body.HostConfig!.NetworkMode, 'bridge');
    assert.equal(body.Hostname, undefined);
    assert.deepEqual(body.ExposedPorts, { '80/tcp': {} });
    info.Config.Hostname = 'web-1';
    body = createOptions(info, specFromInspect(info), { podId: APP_ID });
    assert.equal(body.Hostname, 'web-1', 'a hostname someone chose is kept');
  });

  it("with a new image, drops the old image's defaults so the new image's apply, keeping the container's own", () => {
    const info = appInspect();
    const spec = { ...specFromInspect(info), image: '127.0.0.1:5000/inplace/app:v2' };
    const body = createOptions(info, spec, { podId: SANDBOX_ID, oldImage: appV1ImageConfig() as ImageDefaults });
    assert.equal(body.Image, '127.0.0.1:5000/inplace/app:v2');
    assert.deepEqual(body.Env, ['MODE=fast'], "APP_VERSION=v1 and PATH came from app:v1; MODE is the container's own");
    assert.deepEqual(body.Labels, { team: 'blue', 'annotation.example.com/owner': 'ops' });
    assert.equal(body.Entrypoint, undefined);
    assert.equal(body.Cmd, undefined);
    assert.equal(body.WorkingDir, undefined);
    assert.deepEqual(body.Volumes, {});
    assert.equal(body.StopSignal, 'SIGTERM', 'not an image default: kept');
    assert.ok(body.HostConfig!.Binds!.includes(`${ANON_VOLUME}:/data`), 'the data volume still comes along');
  });

  it('treats a re-pulled tag with other content as a new image, and the same image id as no change', () => {
    const info = appInspect();
    const spec = specFromInspect(info);
    const old = appV1ImageConfig() as ImageDefaults;
    assert.deepEqual(createOptions(info, spec, { podId: SANDBOX_ID, imageChanged: true, oldImage: old }).Env, ['MODE=fast']);
    const same = createOptions(info, { ...spec, image: 'alias/of-the-same:v1' }, { podId: SANDBOX_ID, imageChanged: false, oldImage: old });
    assert.deepEqual(same.Env, info.Config.Env);
    assert.equal(same.Image, 'alias/of-the-same:v1');
  });

  it('keeps an entrypoint the container set itself and drops cmd only with an inherited entrypoint', () => {
    const info = appInspect();
    info.Config.Entrypoint = ['/bin/sh', '-c'];
    info.Config.Cmd = ['exec /app/run.sh'];
    const spec = { ...specFromInspect(info), image: 'app:v2' };
    const body = createOptions(info, spec, { podId: SANDBOX_ID, oldImage: appV1ImageConfig() as ImageDefaults });
    assert.deepEqual(body.Entrypoint, ['/bin/sh', '-c']);
    assert.deepEqual(body.Cmd, ['exec /app/run.sh']);
  });

  it('applies changed command, args, env, working dir, labels and annotations from the spec', () => {
    const info = appInspect();
    const spec = {
      ...specFromInspect(info),
      command: ['/bin/sh'],
      args: ['-c', 'sleep 1'],
      env: [{ key: 'ONLY', value: '1' }],
      workingDir: '/tmp',
      labels: { op: 'x' },
      annotations: { 'a/b': 'c' },
    };
    const body = createOptions(info, spec, { podId: SANDBOX_ID });
    assert.deepEqual(body.Entrypoint, ['/bin/sh']);
    assert.deepEqual(body.Cmd, ['-c', 'sleep 1']);
    assert.deepEqual(body.Env, ['ONLY=1']);
    assert.equal(body.WorkingDir, '/tmp');
    assert.deepEqual(body.Labels, { op: 'x', 'annotation.a/b': 'c' });
  });

  it('writes binds with their options', () => {
    const m = (o: Partial<Dockerode.ContainerInspectInfo['Mounts'][number]>) =>
      ({ Type: 'bind', Source: '/s', Destination: '/d', Mode: '', RW: true, Propagation: 'rprivate', ...o }) as Dockerode.ContainerInspectInfo['Mounts'][number];
    assert.equal(bindFromMount(m({})), '/s:/d');
    assert.equal(bindFromMount(m({ RW: false, Mode: 'ro' })), '/s:/d:ro');
    assert.equal(bindFromMount(m({ Propagation: 'rshared', Mode: 'z' })), '/s:/d:rshared,z');
    assert.equal(bindFromMount(m({ Type: 'volume', Name: 'vol', Source: '/var/lib/docker/volumes/vol/_data', Propagation: '' })), 'vol:/d');
    assert.equal(bindFromMount(m({ Type: 'volume', Name: 'vol', Mode: 'nocopy', RW: false, Propagation: '' })), 'vol:/d:nocopy,ro');
    assert.equal(bindFromMount(m({ Type: 'tmpfs', Source: '' })), undefined);
  });
});

describe('Docker create body for a pod of one on a network of its own', () => {
  const onNetwork = () => {
    const info = appInspect();
    info.HostConfig.NetworkMode = 'appnet';
    info.NetworkSettings.Networks = {
      appnet: {
        IPAMConfig: { IPv4Address: '10.199.77.50' },
        Aliases: ['db', APP_ID.slice(0, 12)],
        Links: null,
        NetworkID: 'n1',
        EndpointID: 'e1',
        Gateway: '10.199.77.1',
        IPAddress: '10.199.77.50',
        IPPrefixLen: 24,
        IPv6Gateway: '',
        GlobalIPv6Address: '',
        GlobalIPv6PrefixLen: 0,
        MacAddress: '02:42:0a:c7:4d:32',
      },
      other: { IPAMConfig: null, Aliases: ['side'], NetworkID: 'n2' },
    } as unknown as Dockerode.ContainerInspectInfo['NetworkSettings']['Networks'];
    return info;
  };

  it('keeps the static IP and user aliases on the primary network, not the old id alias', () => {
    const info = onNetwork();
    const body = createOptions(info, specFromInspect(info), { podId: APP_ID });
    assert.equal(body.HostConfig?.NetworkMode, 'appnet');
    assert.deepEqual(body.NetworkingConfig, { EndpointsConfig: { appnet: { IPAMConfig: { IPv4Address: '10.199.77.50' }, Aliases: ['db'] } } });
  });

  it('lists the further networks to connect after create', () => {
    assert.deepEqual(extraNetworks(onNetwork()), [{ name: 'other', settings: { Aliases: ['side'] } }]);
  });

  // As Podman 4.3 inspects a container made with `--network appnet --ip ... --network-alias db` and joined to a
  // second network: NetworkMode `bridge`, IPAMConfig null everywhere, NetworkID the network's name.
  const onPodmanNetworks = (running = true) => {
    const info = onNetwork();
    info.Name = '/web';
    info.HostConfig.NetworkMode = 'bridge';
    const nets = info.NetworkSettings.Networks;
    nets.appnet = { ...nets.appnet!, IPAMConfig: null as never, NetworkID: 'appnet', IPAddress: running ? '10.199.78.50' : '' };
    nets.other = { ...nets.other!, NetworkID: 'other', IPAddress: running ? '10.199.79.9' : '', Aliases: ['side', APP_ID.slice(0, 12)] };
    return info;
  };

  it('on Podman: joins every network at create, each asking for the address held now (its inspect hides which were asked for)', () => {
    const info = onPodmanNetworks();
    const body = createOptions(info, specFromInspect(info), { podId: APP_ID, engine: 'podman' });
    assert.equal(body.HostConfig?.NetworkMode, 'bridge');
    assert.deepEqual(body.NetworkingConfig, {
      EndpointsConfig: {
        appnet: { IPAMConfig: { IPv4Address: '10.199.78.50' }, Aliases: ['db'] },
        other: { IPAMConfig: { IPv4Address: '10.199.79.9' }, Aliases: ['side'] },
      },
    });
    assert.deepEqual(extraNetworks(info, 'podman'), [], 'nothing left to connect after create');
  });

  it('on Podman: refuses a container that holds no address on its network (stopped), rather than lose one it asked for', () => {
    const info = onPodmanNetworks(false);
    assert.throws(
      () => createOptions(info, specFromInspect(info), { podId: APP_ID, engine: 'podman' }),
      (err: unknown) => AgentError.is(err, 'FailedPrecondition') && /container "web" holds no address on Podman network "appnet"/.test((err as Error).message),
    );
  });

  it('on dockerd the same shape (NetworkMode bridge without a bridge network) sends no endpoints, as before', () => {
    const info = onPodmanNetworks();
    assert.equal(createOptions(info, specFromInspect(info), { podId: APP_ID }).NetworkingConfig, undefined);
  });

  it('sends no endpoint settings for none, host and container: networking', () => {
    for (const mode of ['none', 'host', `container:${SANDBOX_ID}`]) {
      const info = onNetwork();
      info.HostConfig.NetworkMode = mode;
      assert.equal(createOptions(info, specFromInspect(info), { podId: mode.startsWith('container:') ? SANDBOX_ID : APP_ID }).NetworkingConfig, undefined, mode);
      assert.deepEqual(extraNetworks(info), [], mode);
      assert.equal(createOptions(info, specFromInspect(info), { podId: mode.startsWith('container:') ? SANDBOX_ID : APP_ID, engine: 'podman' }).NetworkingConfig, undefined, mode);
    }
  });
});
