// HOST:PORT text both ways, IPv6 in brackets (the DaemonSet writes --metrics-addr=[$(METRICS_HOST)]:9464, the pod IP with deploy/components/metrics-on-node-ip).
import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import { startHttpEndpoints } from '../../src/daemon/http-endpoints.js';
import { joinHostPort, parseHostPort } from '../../src/host-port.js';

describe('host-port', () => {
  it('parses IPv4, names, bracketed IPv6 and a bracketed IPv4 (the manifest\'s POD_IP of either family)', () => {
    assert.deepEqual(parseHostPort('10.88.78.1:9464'), { host: '10.88.78.1', port: 9464 });
    assert.deepEqual(parseHostPort('localhost:0'), { host: 'localhost', port: 0 });
    assert.deepEqual(parseHostPort('[fd00:10:244::5]:9464'), { host: 'fd00:10:244::5', port: 9464 });
    assert.deepEqual(parseHostPort('[::1]:9464'), { host: '::1', port: 9464 });
    assert.deepEqual(parseHostPort('[10.88.78.1]:9464'), { host: '10.88.78.1', port: 9464 });
    assert.deepEqual(parseHostPort(':9464'), { host: '127.0.0.1', port: 9464 });
    assert.deepEqual(parseHostPort('9464'), { host: '127.0.0.1', port: 9464 });
  });

  it('refuses an IPv6 address without brackets, saying how to write it', () => {
    assert.throws(() => parseHostPort('fd00:10:244::5:9464'), /an IPv6 address goes in brackets \(\[fd00:10:244::5\]:9464\), got "fd00:10:244::5:9464"/);
    assert.throws(() => parseHostPort('::1:9464'), /in brackets/);
  });

  it('refuses broken brackets and ports out of range', () => {
    for (const bad of ['[::1]', '[::1:9464', '::1]:9464', '[]:9464', '[::1]:', '[::1]:99999', 'host:port', '10.0.0.1:']) {
      assert.throws(() => parseHostPort(bad), new RegExp(`expected HOST:PORT .*got "${bad.replace(/[[\]]/g, '\\$&')}"`), bad);
    }
  });

  it('joins IPv6 in brackets, IPv4 and names as they are, and reads back what it wrote', () => {
    assert.equal(joinHostPort('fd00:10:244::5', 9464), '[fd00:10:244::5]:9464');
    assert.equal(joinHostPort('::1', '80'), '[::1]:80');
    assert.equal(joinHostPort('10.88.78.1', 9464), '10.88.78.1:9464');
    assert.equal(joinHostPort('node-1', 9464), 'node-1:9464');
    for (const [h, p] of [['fd00::5', 1], ['10.0.0.1', 2]] as const) assert.deepEqual(parseHostPort(joinHostPort(h, p)), { host: h, port: p });
  });

  it('the agent\'s metrics server on a bracketed IPv6 address listens there and says where, in the same form', async () => {
    const registry = new Registry();
    const ok = async () => undefined;
    const endpoints = await startHttpEndpoints('[::1]:0', registry, { live: ok, ready: ok });
    try {
      assert.match(endpoints.address, /^\[::1\]:\d+$/);
      const res = await fetch(`http://${endpoints.address}/healthz`);
      assert.equal(await res.text(), 'ok\n');
    } finally {
      await endpoints.close();
    }
  });
});
