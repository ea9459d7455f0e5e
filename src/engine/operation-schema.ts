// The shape of an operation record as the journal stores it: what start-up accepts before resuming anything.
// Unknown fields are kept (a newer agent may have added some); a wrong or missing known field is refused.
// A standalone container's steps are checked here; another strategy's are its own, checked by the executor
// against that strategy when the operation resumes.
// zod's v3 API (shipped and kept in the zod package): zod 4's own API loads every locale and costs the idle
// agent about 9 MiB of RSS; v3's about 1 (bench:rss).
import { z } from 'zod/v3';
import { OperationStates, type Operation } from './operation.js';
import { StandaloneSteps } from './standalone-strategy.js';

/** An object schema that keeps unknown keys. */
const loose = <T extends z.ZodRawShape>(shape: T) => z.object(shape).passthrough();

const nonNegative = z.number().finite().nonnegative();
const isoTime = z.string().refine((s) => !Number.isNaN(Date.parse(s)), 'not a date');

const step = z.string().regex(/^[A-Za-z]{1,40}$/, 'not a step');
const stepRecord = loose({ step, at: isoTime, detail: z.string().optional() });
const standaloneSteps: ReadonlySet<string> = new Set(StandaloneSteps);

const containerTarget = loose({
    name: z.string(),
    strategy: z.enum(['standalone', 'kubelet']).optional(),
    oldId: z.string(),
    oldRuntimeName: z.string(),
    oldImage: z.string(),
    newImage: z.string(),
    newAttempt: nonNegative,
    newId: z.string(),
    rollbackId: z.string(),
    step,
    steps: z.array(stepRecord),
    exitCode: z.number().optional(),
    error: z.string().optional(),
    downtimeMs: nonNegative.optional(),
    reason: z.string().optional(),
    traffic: z.string().optional(),
    unservedMs: nonNegative.optional(),
  })
  .refine((t) => (t.strategy ?? 'standalone') !== 'standalone' || (standaloneSteps.has(t.step) && t.steps.every((r) => standaloneSteps.has(r.step))), {
    message: 'not a step of the standalone strategy',
    path: ['step'],
  });

const request = loose({
  pod: z.string(),
  containers: z.array(z.string()),
  images: z.record(z.string(), z.string()),
  graceSeconds: nonNegative,
  minReadyMs: nonNegative,
  timeoutMs: nonNegative,
  skipPreStop: z.boolean().optional(),
});

const imagePull = loose({ image: z.string(), bytesDone: nonNegative, bytesTotal: nonNegative, done: z.boolean(), pulled: z.boolean() });

const operation = loose({
  id: z.string().regex(/^[A-Za-z0-9-]{1,64}$/, 'not an operation id'),
  podId: z.string(),
  podName: z.string(),
  podIp: z.string(),
  state: z.enum(OperationStates),
  request,
  containers: z.array(containerTarget),
  pulls: z.array(imagePull).optional(),
  createdAt: isoTime,
  updatedAt: isoTime,
  finishedAt: isoTime.optional(),
  error: z.string().optional(),
  errorKind: z.string().optional(),
  cancelRequested: z.boolean().optional(),
});

/** The record as an Operation; throws an Error listing what is wrong (first few issues) otherwise. */
export function parseOperationRecord(value: unknown): Operation {
  const r = operation.safeParse(value);
  if (r.success) return r.data as Operation;
  const issues = r.error.issues.slice(0, 3).map((i) => `${i.path.join('.') || '(record)'}: ${i.message}`);
  throw new Error(`not an operation record (${issues.join('; ')}${r.error.issues.length > 3 ? '; ...' : ''})`);
}
