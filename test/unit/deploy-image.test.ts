// One image recipe: deploy/Dockerfile (what users build) and scripts/kube-deploy-agent (CI's offline umoci build,
// the image the cluster tests run) both put scripts/stage-image-app's output at /opt/inplace-agent, after
// `npm run build`, which bundles the Kubernetes client. CI cannot build the Dockerfile (no base image registry
// here), so this checks the two recipes' calls and the files the script stages from this checkout's build.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { REPO_ROOT } from '../support/deploy-render.js';

const read = (p: string) => readFileSync(path.join(REPO_ROOT, p), 'utf8');
const code = (text: string) => text.split('\n').filter((l) => !/^\s*#/.test(l)).join('\n');

/** Every file under dir, relative to it, sorted. */
function files(dir: string, under = ''): string[] {
  return readdirSync(path.join(dir, under), { withFileTypes: true })
    .flatMap((e) => (e.isDirectory() ? files(dir, path.join(under, e.name)) : [path.join(under, e.name)]))
    .sort();
}

describe('the agent image: one recipe for deploy/Dockerfile and CI', function () {
  this.timeout(60_000);

  it('deploy/Dockerfile runs npm run build, then stages /opt/inplace-agent with scripts/stage-image-app, and ships only that', () => {
    const df = code(read('deploy/Dockerfile'));
    assert.match(df, /RUN npm run build && scripts\/stage-image-app \/opt\/inplace-agent\n/);
    const final = df.slice(df.lastIndexOf('\nFROM '));
    assert.deepEqual([...final.matchAll(/^COPY (.*)$/gm)].map((m) => m[1]), ['--from=build /opt/inplace-agent /opt/inplace-agent']);
    assert.match(final, /ENV NODE_ENV=production/);
  });

  it('npm run build bundles the Kubernetes client (scripts/bundle-kube-client.mjs) after tsc', () => {
    const build = (JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts.build;
    assert.match(build, /tsc -p tsconfig\.json && node scripts\/bundle-kube-client\.mjs/);
  });

  it('scripts/kube-deploy-agent stages the same directory with the same script, and nothing else into it', () => {
    const s = code(read('scripts/kube-deploy-agent'));
    assert.match(s, /app=\$r\/opt\/inplace-agent\n/);
    assert.match(s, /"\$ROOT\/scripts\/stage-image-app" "\$app"\n/);
    assert.deepEqual([...s.matchAll(/^.*"\$app[/"].*$/gm)].map((m) => m[0].trim()), ['"$ROOT/scripts/stage-image-app" "$app"'], 'no other write under /opt/inplace-agent');
    assert.match(s, /sha256sum "\$NODE_BIN" "\$ROOT\/package-lock\.json" "\$ROOT\/scripts\/stage-image-app"/, 'a changed recipe makes a new image');
  });

  it('stages package.json, dist/src with the bundled client and the executable commands, and proto; no tests or benches', () => {
    const dest = path.join(mkdtempSync(path.join(os.tmpdir(), 'inplace-stage-')), 'app');
    try {
      execFileSync(path.join(REPO_ROOT, 'scripts/stage-image-app'), [dest, '--no-deps'], { stdio: 'pipe' });
      const got = files(dest);
      const want = ['package.json', ...files(path.join(REPO_ROOT, 'dist/src')).map((f) => `dist/src/${f}`), ...files(path.join(REPO_ROOT, 'proto')).map((f) => `proto/${f}`)].sort();
      assert.deepEqual(got, want);
      assert.ok(!got.some((f) => /^dist\/(test|bench|scripts)\//.test(f)));
      assert.match(readFileSync(path.join(dest, 'dist/src/k8s/client.js'), 'utf8').slice(0, 200), /__inplaceRequire/, 'the bundled client');
      for (const bin of ['dist/src/daemon/main.js', 'dist/src/cli/main.js']) assert.ok(statSync(path.join(dest, bin)).mode & 0o100, `${bin} executable`);
    } finally {
      rmSync(path.dirname(dest), { recursive: true, force: true });
    }
  });

  it('refuses a destination that is not empty', () => {
    const dest = mkdtempSync(path.join(os.tmpdir(), 'inplace-stage-'));
    try {
      execFileSync('touch', [path.join(dest, 'x')]);
      assert.throws(() => execFileSync(path.join(REPO_ROOT, 'scripts/stage-image-app'), [dest, '--no-deps'], { stdio: 'pipe' }), /exists and is not empty/);
    } finally {
      rmSync(dest, { recursive: true, force: true });
    }
  });
});
