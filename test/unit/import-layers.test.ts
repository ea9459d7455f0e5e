// The layering lint of eslint.config.js bites: each banned import, written into a file of the directory it is
// banned from, fails `npm run lint` with that rule's message; the allowed imports beside them pass.
import assert from 'node:assert/strict';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ESLint } from 'eslint';

/** The repository's root (this file runs as dist/test/unit/import-layers.test.js). */
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

/** The messages of the layering rules for `code` as if it were the file `file` of the repository. */
async function layerErrors(eslint: ESLint, file: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: path.join(root, file) });
  return result.messages.filter((m) => m.ruleId === 'no-restricted-imports' || m.ruleId === 'no-restricted-syntax').map((m) => m.message);
}

describe('import layering lint', function () {
  this.timeout(60_000);
  const eslint = new ESLint({ cwd: root });

  const banned: { file: string; code: string; says: RegExp }[] = [
    { file: 'src/pull/fixture.ts', code: "import { CriRuntime } from '../runtime/cri/cri-runtime.js';\nexport const x = CriRuntime;\n", says: /pull\/ must not import a runtime adapter/ },
    { file: 'src/pull/fixture.ts', code: "export const x = () => import('../runtime/containerd/client.js');\n", says: /pull\/ must not import a runtime adapter/ },
    { file: 'src/pull/fixture.ts', code: "export { DockerRuntime } from '../runtime/docker/docker-runtime.js';\n", says: /pull\/ must not import a runtime adapter/ },
    { file: 'src/cli/fixture.ts', code: "import type { Operation } from '../engine/operation.js';\nexport type X = Operation;\n", says: /cli\/ must not import engine\// },
    { file: 'src/cli/fixture.ts', code: "import type { Runtime } from '../runtime/runtime.js';\nexport type X = Runtime;\n", says: /cli\/ must not import runtime\// },
    { file: 'src/engine/fixture.ts', code: "import { NodePods } from '../kube/node-pods.js';\nexport const x = NodePods;\n", says: /engine\/ must not import kube\// },
    { file: 'src/engine/fixture.ts', code: "export const x = () => import('../kube/kube-mode.js');\n", says: /engine\/ must not import kube\// },
    { file: 'src/engine/fixture.ts', code: "import { DockerRuntime } from '../runtime/docker/docker-runtime.js';\nexport const x = DockerRuntime;\n", says: /engine\/ must not import a runtime adapter/ },
  ];
  for (const b of banned) {
    it(`fails ${b.file}: ${b.code.split('\n')[0]}`, async () => {
      const errors = await layerErrors(eslint, b.file, b.code);
      assert.equal(errors.length, 1, JSON.stringify(errors));
      assert.match(errors[0], b.says);
    });
  }

  it('passes the imports the layers allow', async () => {
    assert.deepEqual(await layerErrors(eslint, 'src/engine/fixture.ts', "import type { Runtime } from '../runtime/runtime.js';\nexport type X = Runtime;\n"), []);
    assert.deepEqual(await layerErrors(eslint, 'src/cli/fixture.ts', "import { parseImageRef } from '../image-ref.js';\nexport const x = parseImageRef;\n"), []);
    assert.deepEqual(await layerErrors(eslint, 'src/daemon/fixture.ts', "export const x = () => import('../runtime/cri/cri-runtime.js');\n"), []);
  });
});
