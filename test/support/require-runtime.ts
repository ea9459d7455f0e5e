// Integration suites need a real runtime. When it cannot be reached the suite is skipped, unless
// INPLACE_REQUIRE_RUNTIMES=1 (CI, `scripts/sandbox up` done) makes that a failure.

/** Whether unreachable runtimes fail the suite instead of skipping it. */
export function runtimesRequired(env: NodeJS.ProcessEnv = process.env): boolean {
  return env.INPLACE_REQUIRE_RUNTIMES === '1';
}

/**
 * For a mocha `before` hook: runs probe (e.g. `runtime.version()`); when it fails, skips the suite, or
 * throws naming the runtime when runtimes are required.
 */
export async function requireRuntime(ctx: Mocha.Context, what: string, probe: () => Promise<unknown>): Promise<void> {
  try {
    await probe();
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    if (runtimesRequired()) {
      throw new Error(`${what} is required (INPLACE_REQUIRE_RUNTIMES=1) but cannot be reached: ${why}`, { cause: err });
    }
    console.warn(`  skipping: ${what} cannot be reached (${why}); run scripts/sandbox up, or set INPLACE_REQUIRE_RUNTIMES=1 to fail instead`);
    ctx.skip();
  }
}
