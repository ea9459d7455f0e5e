// prom-client's index loads every default metric module as it is loaded, and one of them (the process CPU
// counters) requires @opentelemetry/api, for exemplars taken from the active trace span: about 0.9 MiB of an idle
// agent's RSS (measured, docs/benchmarks.md bench:rss) for a feature the agent never turns on (no metric of it
// enables exemplars, and no tracer is installed in the process). Imported before prom-client, this module puts
// a stand-in for @opentelemetry/api in the CommonJS module cache, so prom-client finds that instead; it answers
// as the real API does when no tracer is registered (no active span).
import { createRequire } from 'node:module';
import { putStandIn } from '../module-stand-in.js';

/** What prom-client asks of the API (only with exemplars on): the active context's span, of which there is none. */
export const otelStandIn = {
  context: { active: (): undefined => undefined },
  trace: { getSpan: (): undefined => undefined },
};

putStandIn(createRequire(createRequire(import.meta.url).resolve('prom-client')), '@opentelemetry/api', otelStandIn);
