import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { lookupAuth, normalizeRegistryKey, parseAuthConfig, readAuthFile, redact } from '../../src/pull/auth.js';
import { classifyPullError, isRetryable } from '../../src/pull/pull-errors.js';
import { dockerPullError } from '../../src/runtime/docker/pull-errors.js';
import { AgentError } from '../../src/errors.js';

const b64 = (s: string) => Buffer.from(s).toString('base64');

describe('pull auth: config.json parsing', () => {
  it('reads auth (base64 user:password), username/password and identity tokens', () => {
    const k = parseAuthConfig(
      JSON.stringify({
        auths: {
          'https://index.docker.io/v1/': { auth: b64('hubuser:hub:pass') },
          'registry.example.com:5000': { username: 'alice', password: 's3cret' },
          'https://token.example.com/v2/': { identitytoken: 'tok-123' },
          'empty.example.com': {},
        },
        credsStore: 'desktop',
      }),
    );
    assert.deepEqual([...k.keys()].sort(), ['docker.io', 'registry.example.com:5000', 'token.example.com']);
    assert.equal(k.get('docker.io')?.username, 'hubuser');
    assert.equal(k.get('docker.io')?.password, 'hub:pass');
    assert.equal(k.get('registry.example.com:5000')?.password, 's3cret');
    assert.equal(k.get('token.example.com')?.identityToken, 'tok-123');
  });

  it('accepts a bare auths map', () => {
    const k = parseAuthConfig({ '127.0.0.1:5001': { auth: b64('u:p') } });
    assert.equal(k.get('127.0.0.1:5001')?.username, 'u');
  });

  it('normalises URL keys and Docker Hub aliases', () => {
    assert.equal(normalizeRegistryKey('https://index.docker.io/v1/'), 'docker.io');
    assert.equal(normalizeRegistryKey('registry-1.docker.io'), 'docker.io');
    assert.equal(normalizeRegistryKey('http://Reg.Example.com:5000/v2/'), 'reg.example.com:5000');
    assert.equal(normalizeRegistryKey('reg.example.com/team/'), 'reg.example.com/team');
  });

  it('refuses malformed files naming the key, never the secret', async () => {
    assert.throws(() => parseAuthConfig('{nope'), /not valid JSON/);
    const err = (() => {
      try {
        parseAuthConfig({ auths: { 'r.example.com': { auth: b64('nocolonsecretvalue') } } });
      } catch (e) {
        return e as AgentError;
      }
    })();
    assert.ok(err instanceof AgentError && err.kind === 'InvalidArgument');
    assert.match(err.message, /r\.example\.com/);
    assert.doesNotMatch(err.message, /nocolonsecretvalue/);
    await assert.rejects(readAuthFile('/nonexistent/config.json'), /cannot read auth file \/nonexistent\/config.json: ENOENT/);
  });

  it('reads a file', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'auth-test-'));
    const file = path.join(dir, 'config.json');
    writeFileSync(file, JSON.stringify({ auths: { '127.0.0.1:5001': { auth: b64('bob:pw') } } }));
    const k = await readAuthFile(file);
    assert.equal(lookupAuth(k, '127.0.0.1:5001/inplace/app:v1')?.username, 'bob');
  });
});

describe('pull auth: lookup like the kubelet keyring', () => {
  const keyring = parseAuthConfig({
    auths: {
      'https://index.docker.io/v1/': { auth: b64('hub:1') },
      'reg.example.com': { auth: b64('host:2') },
      'reg.example.com/team': { auth: b64('team:3') },
      'reg.example.com/team/special': { auth: b64('special:4') },
      '*.corp.example.com': { auth: b64('glob:5') },
      'eu.corp.example.com': { auth: b64('exact:6') },
      '127.0.0.1:5001': { auth: b64('local:7') },
    },
  });
  const who = (image: string) => lookupAuth(keyring, image)?.username;

  it('matches Docker Hub short names', () => {
    assert.equal(who('busybox'), 'hub');
    assert.equal(who('docker.io/library/busybox:1'), 'hub');
    assert.equal(who('index.docker.io/library/busybox'), 'hub');
  });

  it('prefers the longest path prefix on one host', () => {
    assert.equal(who('reg.example.com/other/app:v1'), 'host');
    assert.equal(who('reg.example.com/team/app:v1'), 'team');
    assert.equal(who('reg.example.com/team/special/app@sha256:' + 'a'.repeat(64)), 'special');
    assert.equal(who('reg.example.com/teamster/app'), 'host');
  });

  it('matches globs one label deep, exact hosts first', () => {
    assert.equal(who('us.corp.example.com/app'), 'glob');
    assert.equal(who('eu.corp.example.com/app'), 'exact');
    assert.equal(who('a.b.corp.example.com/app'), undefined);
  });

  it('needs the same port', () => {
    assert.equal(who('127.0.0.1:5001/app:v1'), 'local');
    assert.equal(who('127.0.0.1:5000/app:v1'), undefined);
    assert.equal(who('reg.example.com:443/app'), undefined);
  });

  it('names the registry host they were given for as serverAddress (a URL, as containerd parses it)', () => {
    const at = (image: string) => lookupAuth(keyring, image)?.serverAddress;
    assert.equal(at('127.0.0.1:5001/app:v1'), 'https://127.0.0.1:5001');
    assert.equal(at('reg.example.com/team/app:v1'), 'https://reg.example.com');
    assert.equal(at('us.corp.example.com/app'), 'https://us.corp.example.com', 'a glob key: the image\'s own host, not the glob');
    assert.equal(at('busybox'), 'https://registry-1.docker.io', 'Docker Hub: the host containerd pulls from');
    assert.equal(keyring.get('127.0.0.1:5001')?.serverAddress, undefined, 'the keyring itself is left as parsed');
  });

  it('finds nothing in an empty keyring or for a bad reference', () => {
    assert.equal(lookupAuth(new Map(), 'busybox'), undefined);
    assert.equal(lookupAuth(keyring, 'Bad Ref'), undefined);
  });

  it('redacts passwords and encoded pairs', () => {
    const a = parseAuthConfig({ r: { username: 'u', password: 'hunter22' } }).get('r');
    const b = parseAuthConfig({ r: { auth: b64('u:swordfish') } }).get('r');
    assert.equal(redact('x hunter22 y ' + b64('u:swordfish') + ' swordfish', a, b), 'x *** y *** ***');
  });
});

describe('pull errors', () => {
  // dockerd's wording (on CRI the adapter's table decides: cri-pull-messages.test.ts).
  it('recognises a missing image, refused credentials and keeps retryable kinds (Docker)', () => {
    const nf = classifyPullError(dockerPullError(new AgentError('Internal', 'manifest for r/x:nope not found: manifest unknown: manifest unknown')), 'r/x:nope');
    assert.equal(nf.kind, 'NotFound');
    assert.match(nf.message, /pull of r\/x:nope: image not found/);
    assert.equal(isRetryable(nf), false);
    const ua = classifyPullError(dockerPullError(new AgentError('Unavailable', 'unexpected status: 401 Unauthorized')), 'r/x:1');
    assert.equal(ua.kind, 'Unauthenticated');
    assert.match(ua.message, /requires credentials and none were given/);
    const bad = classifyPullError(dockerPullError(new AgentError('Internal', 'no basic auth credentials pw=topsecret')), 'r/x:1', { username: 'me', password: 'topsecret' });
    assert.match(bad.message, /rejected the credentials given for it/);
    assert.doesNotMatch(bad.message, /"me"/, 'no user name either');
    assert.doesNotMatch(bad.message, /topsecret/);
    const down = classifyPullError(dockerPullError(new AgentError('Unavailable', 'dial tcp 127.0.0.1:1: connect: connection refused')), 'r/x:1');
    assert.equal(down.kind, 'Unavailable');
    assert.equal(isRetryable(down), true);
    assert.equal(classifyPullError(down, 'r/x:1'), down, 'classifying twice changes nothing');
  });
});
