import assert from 'node:assert/strict';
import { MAX_DURATION_MS } from '../../src/api/limits.js';
import { checkDurationMs, validateOperationId, validatePull, validateRestart } from '../../src/api/validate.js';
import { AgentError } from '../../src/errors.js';
import type { RestartRequest__Output } from '../../src/gen/inplace/v1/RestartRequest.js';
import { quote } from '../../src/quote.js';
import { CriRuntime } from '../../src/runtime/cri/cri-runtime.js';
import { DockerRuntime } from '../../src/runtime/docker/docker-runtime.js';

/** The adapters' own bounds of a container name (their capabilities); neither connects until called. */
const cri = new CriRuntime('unix:///nonexistent/cri.sock');
const docker = new DockerRuntime('unix:///nonexistent/docker.sock');
const CRI_NAMES = cri.capabilities.maxContainerName;
const DOCKER_NAMES = docker.capabilities.maxContainerName;
after(() => {
  cri.close();
  docker.close();
});

const restart = (over: Partial<RestartRequest__Output> = {}): RestartRequest__Output => ({
  pod: 'ns/web',
  containers: ['app'],
  images: {},
  graceSeconds: 30,
  minReadyMs: '1000',
  timeoutMs: '0',
  graceSet: true,
  minReadySet: true,
  dryRun: false,
  skipPreStop: false,
  ...over,
});

const invalid = (re: RegExp) => (e: unknown) => e instanceof AgentError && e.kind === 'InvalidArgument' && re.test(e.message) && e.message.length < 300;

describe('quote', () => {
  it('shows a short, escaped prefix and the full length', () => {
    assert.equal(quote('app'), '"app"');
    assert.equal(quote('a\nb\u0000\u202e'), '"a\\nb\\u0000\\u202e"');
    const q = quote('x'.repeat(1_000_000));
    assert.ok(q.length < 100, q);
    assert.match(q, /\(1000000 characters\)$/);
  });
});

describe('API request validation', () => {
  it('accepts an ordinary restart at the bounds', () => {
    validateRestart(restart({ minReadyMs: String(MAX_DURATION_MS), timeoutMs: String(MAX_DURATION_MS), images: { app: '127.0.0.1:5000/inplace/app:v2' } }), CRI_NAMES);
  });

  it('refuses durations past 2^31-1 ms, up to 2^64-1, on the server', () => {
    for (const d of [String(MAX_DURATION_MS + 1), '18446744073709551615', '99999999999999999999999']) {
      assert.throws(() => validateRestart(restart({ minReadyMs: d }), CRI_NAMES), invalid(/min_ready_ms/));
      assert.throws(() => validateRestart(restart({ timeoutMs: d }), CRI_NAMES), invalid(/timeout_ms/));
    }
    assert.throws(() => validateRestart(restart({ graceSeconds: 4294967295 }), CRI_NAMES), invalid(/grace_seconds/));
    assert.throws(() => checkDurationMs('x', '-1'), invalid(/whole number/));
  });

  it('bounds identifiers to their real lengths and never echoes more than a prefix', () => {
    const huge = 'a'.repeat(1 << 20);
    assert.throws(() => validateRestart(restart({ pod: huge }), CRI_NAMES), invalid(/pod is 1048576 characters long/));
    assert.throws(() => validateRestart(restart({ containers: ['c'.repeat(64)] }), CRI_NAMES), invalid(/at most 63/));
    validateRestart(restart({ containers: ['c'.repeat(64)] }), DOCKER_NAMES);
    assert.throws(() => validateRestart(restart({ images: { app: `r/${'n'.repeat(600)}:1` } }), CRI_NAMES), invalid(/image/));
    assert.throws(() => validateOperationId('0'.repeat(37)), invalid(/at most 36/));
    assert.throws(() => validateOperationId('$(id)'), invalid(/operation id/));
    validateOperationId('no-such-operation');
  });

  it('caps containers per restart and images per pull, and refuses duplicates', () => {
    assert.throws(() => validateRestart(restart({ containers: Array.from({ length: 33 }, (_, i) => `c${i}`) }), CRI_NAMES), invalid(/at most 32 containers/));
    assert.throws(() => validateRestart(restart({ containers: ['app', 'app'] }), CRI_NAMES), invalid(/named twice/));
    const pull = { images: ['busybox'], parallel: 0, timeoutMs: '0', authConfigJson: '', pin: false, always: false };
    validatePull(pull);
    assert.throws(() => validatePull({ ...pull, images: Array.from({ length: 101 }, (_, i) => `img${i}`) }), invalid(/at most 100 images/));
    assert.throws(() => validatePull({ ...pull, images: ['busybox', 'docker.io/library/busybox:latest'] }), invalid(/named twice/));
    assert.throws(() => validatePull({ ...pull, images: [] }), invalid(/at least one image/));
  });
});
