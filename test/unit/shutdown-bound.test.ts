// The hard bound on a shutdown (src/daemon/shutdown-bound.ts): its length for a drain timeout, the operations'
// share of it, and the armed timer that exits with status 1 and says why (driven by hand); and the DaemonSet's
// grace period above it.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { daemonCommand } from '../../src/daemon/options.js';
import { parseDuration } from '../../src/duration.js';
import { AFTER_DRAIN_MS, MIN_SHUTDOWN_MS, armShutdownBound, drainBudgetMs, shutdownBoundMs } from '../../src/daemon/shutdown-bound.js';
import { REPO_ROOT } from '../support/deploy-render.js';
import { memoryLogger } from '../support/memory-logger.js';

describe('shutdown bound', () => {
  it('is the drain timeout, and never below the minimum', () => {
    assert.equal(shutdownBoundMs(90_000), 90_000);
    assert.equal(shutdownBoundMs(0), MIN_SHUTDOWN_MS);
  });

  it("gives the operations what is left of the drain timeout, less the time kept for the rest, never below 0", () => {
    assert.equal(drainBudgetMs(90_000, 0), 90_000 - AFTER_DRAIN_MS);
    assert.equal(drainBudgetMs(90_000, 60_000), 30_000 - AFTER_DRAIN_MS);
    assert.equal(drainBudgetMs(3000, 5000), 0);
    assert.equal(drainBudgetMs(0, 0), 0);
  });

  it('arms one unref\'d timer of the bound; when it fires the process exits with 1 after an error line', async () => {
    const { logger, lines } = memoryLogger();
    const armed: { fn: () => void; ms: number; unrefd: boolean }[] = [];
    const codes: number[] = [];
    const exited = new Promise<void>((resolve) =>
      armShutdownBound(
        3000,
        logger,
        (c) => {
          codes.push(c);
          resolve();
        },
        (fn, ms) => {
          const t = { fn, ms, unrefd: false };
          armed.push(t);
          return { unref: () => (t.unrefd = true) };
        },
      ),
    );
    assert.equal(armed.length, 1);
    assert.equal(armed[0].ms, 3000);
    assert.equal(armed[0].unrefd, true, 'the timer never holds an agent that is done');
    assert.deepEqual(codes, [], 'nothing happens before the bound');
    armed[0].fn();
    await exited;
    assert.deepEqual(codes, [1]);
    assert.match(lines.join('\n'), /shutdown did not finish within the drain timeout: exiting now/);
  });
});

describe("the DaemonSet's grace period", () => {
  it("sits above the shutdown bound of the agent's drain timeout, in the kustomization and the Helm chart", () => {
    for (const file of ['deploy/daemonset.yaml', 'deploy/helm/inplace-agent/templates/daemonset.yaml']) {
      const text = readFileSync(path.join(REPO_ROOT, file), 'utf8');
      const grace = Number(/terminationGracePeriodSeconds: (\d+)/.exec(text)?.[1]);
      const flag = /--drain-timeout=(\S+)/.exec(text)?.[1];
      const cmd = daemonCommand('0');
      cmd.parse(['node', 'inplace-agent', ...(flag ? [`--drain-timeout=${flag}`] : [])]);
      const drainMs = parseDuration(String(cmd.opts<{ drainTimeout: string }>().drainTimeout));
      assert.ok(grace * 1000 > shutdownBoundMs(drainMs), `${file}: grace ${grace}s, drain timeout ${drainMs} ms`);
    }
  });
});
