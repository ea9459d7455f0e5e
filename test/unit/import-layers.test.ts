// The layering lint of eslint.config.js bites: each banned import, written into a file of the directory it is
// banned from, fails `npm run lint` with that rule's message; the allowed imports beside them pass.
import assert from 'node:assert/strict';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { ESLint } from 'eslint';

/** The repository's root (this file runs as dist/test/unit/import-layers.test.js). */
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

/** The room table of eslint.config.js (plain JavaScript at the root, read as the lint reads it). */
const { ROOMS } = (await import(pathToFileURL(path.join(root, 'eslint.config.js')).href)) as { ROOMS: Record<string, { may: string[] }> };

/** The messages of the layering rules for `code` as if it were the file `file` of the repository. */
async function layerErrors(eslint: ESLint, file: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: path.join(root, file) });
  return result.messages.filter((m) => m.ruleId === 'no-restricted-imports' || m.ruleId === 'no-restricted-syntax').map((m) => m.message);
}

describe('import layering lint', function () {
  this.timeout(60_000);
  const eslint = new ESLint({ cwd: root });

  const banned: { file: string; code: string; says: RegExp }[] = [
    { file: 'src/pull/fixture.ts', code: "import { CriRuntime } from '../runtime/cri/cri-runtime.js';\nexport const x = CriRuntime;\n", says: /pull\/ must not import runtime\/cri\// },
    { file: 'src/pull/fixture.ts', code: "export const x = () => import('../runtime/containerd/client.js');\n", says: /pull\/ must not import runtime\/containerd\// },
    { file: 'src/pull/fixture.ts', code: "export { DockerRuntime } from '../runtime/docker/docker-runtime.js';\n", says: /pull\/ must not import runtime\/docker\// },
    { file: 'src/cli/fixture.ts', code: "import type { Operation } from '../engine/operation.js';\nexport type X = Operation;\n", says: /cli\/ must not import engine\// },
    { file: 'src/cli/fixture.ts', code: "import type { Runtime } from '../runtime/runtime.js';\nexport type X = Runtime;\n", says: /cli\/ must not import runtime\// },
    { file: 'src/engine/fixture.ts', code: "import { NodePods } from '../kube/node-pods.js';\nexport const x = NodePods;\n", says: /engine\/ must not import kube\// },
    { file: 'src/engine/fixture.ts', code: "export const x = () => import('../kube/kube-mode.js');\n", says: /engine\/ must not import kube\// },
    { file: 'src/engine/fixture.ts', code: "import { DockerRuntime } from '../runtime/docker/docker-runtime.js';\nexport const x = DockerRuntime;\n", says: /engine\/ must not import runtime\/docker\// },
    { file: 'src/engine/fixture.ts', code: "import { PullService } from '../pull/pull-service.js';\nexport const x = PullService;\n", says: /engine\/ must not import pull\// },
    { file: 'src/runtime/cri/fixture.ts', code: "import { DockerRuntime } from '../docker/docker-runtime.js';\nexport const x = DockerRuntime;\n", says: /runtime\/cri\/ must not import runtime\/docker\// },
    { file: 'src/runtime/docker/fixture.ts', code: "import { CriRuntime } from '../cri/cri-runtime.js';\nexport const x = CriRuntime;\n", says: /runtime\/docker\/ must not import runtime\/cri\// },
    { file: 'src/runtime/fixture.ts', code: "import { CriRuntime } from './cri/cri-runtime.js';\nexport const x = CriRuntime;\n", says: /runtime\/ must not import runtime\/cri\// },

    { file: 'src/controllers/rollout/fixture.ts', code: "import { imageMatches } from '../../kube/kubelet/verify.js';\nexport const x = imageMatches;\n", says: /controllers\/rollout\/ must not import kube\// },
    { file: 'src/controllers/rollout/fixture.ts', code: "import { ContainerRestartController } from '../container-restart/controller.js';\nexport const x = ContainerRestartController;\n", says: /controllers\/rollout\/ reaches controllers\/container-restart\/ only through its types.ts/ },
    { file: 'src/controllers/rollout/workloads/fixture.ts', code: "import { FleetAgent } from '../../image-prewarm/fleet-agent.js';\nexport const x = FleetAgent;\n", says: /controllers\/rollout\/ reaches controllers\/image-prewarm\/ only through its types.ts, summary.ts/ },
    { file: 'src/controllers/sidecarset/fixture.ts', code: "import { planRollout } from '../rollout/plan.js';\nexport const x = planRollout;\n", says: /controllers\/sidecarset\/ must not import controllers\/rollout\// },
    { file: 'src/controllers/image-prewarm/fixture.ts', code: "import { Reasons } from '../../engine/reasons.js';\nexport const x = Reasons;\n", says: /controllers\/image-prewarm\/ must not import engine\// },
    { file: 'src/k8s/fixture.ts', code: "import { NodePods } from '../kube/node-pods.js';\nexport const x = NodePods;\n", says: /k8s\/ must not import kube\// },
    { file: 'src/cli/fixture.ts', code: "import { ContainerRestartController } from '../controllers/container-restart/controller.js';\nexport const x = ContainerRestartController;\n", says: /cli\/ reaches controllers\/container-restart\/ only through/ },
  ];
  for (const b of banned) {
    it(`fails ${b.file}: ${b.code.split('\n')[0]}`, async () => {
      const errors = await layerErrors(eslint, b.file, b.code);
      assert.equal(errors.length, 1, JSON.stringify(errors));
      assert.match(errors[0], b.says);
    });
  }

  // One planted import for every room and every room it may not import, the table of eslint.config.js read back.
  for (const [room, { may }] of Object.entries(ROOMS)) {
    const depth = room.split('/').length;
    for (const other of Object.keys(ROOMS).filter((r) => r !== room && !may.includes(r))) {
      const spec = `${'../'.repeat(depth)}${other}/planted.js`;
      it(`fails src/${room}/ importing ${other}/`, async () => {
        const errors = await layerErrors(eslint, `src/${room}/fixture.ts`, `import { x } from '${spec}';\nexport const y = x;\n`);
        assert.equal(errors.length, 1, JSON.stringify(errors));
        assert.match(errors[0], new RegExp(`${room}/ must not import ${other}/:`));
      });
    }
    for (const other of may) {
      it(`passes src/${room}/ importing ${other}/`, async () => {
        assert.deepEqual(await layerErrors(eslint, `src/${room}/fixture.ts`, `import { x } from '${'../'.repeat(depth)}${other}/types.js';\nexport const y = x;\n`), []);
      });
    }
  }

  it('passes the imports the layers allow', async () => {
    assert.deepEqual(await layerErrors(eslint, 'src/engine/fixture.ts', "import type { Runtime } from '../runtime/runtime.js';\nexport type X = Runtime;\n"), []);
    assert.deepEqual(await layerErrors(eslint, 'src/cli/fixture.ts', "import { parseImageRef } from '../image-ref.js';\nexport const x = parseImageRef;\n"), []);
    assert.deepEqual(await layerErrors(eslint, 'src/daemon/fixture.ts', "export const x = () => import('../runtime/cri/cri-runtime.js');\n"), []);
    assert.deepEqual(await layerErrors(eslint, 'src/controllers/rollout/fixture.ts', "import { summarize } from '../image-prewarm/summary.js';\nexport const x = summarize;\n"), []);
    assert.deepEqual(await layerErrors(eslint, 'src/controllers/rollout/fixture.ts', "import { LeaseElection } from '../../k8s/lease-election.js';\nexport const x = LeaseElection;\n"), []);
  });
});
