// The shape of an operation record as the journal stores it: what start-up accepts before resuming anything.
// Unknown fields are kept (a newer agent may have added some); a wrong or missing known field is refused.
// zod's v3 API (shipped and kept in the zod package): zod 4's own API loads every locale and costs the idle
// agent about 9 MiB of RSS; v3's costs about 1 (bench:rss).
import { z } from 'zod/v3';
import { ContainerSteps, OperationStates, type Operation } from './operation.js';

/** An object schema that keeps unknown keys. */
const loose = <T extends z.ZodRawShape>(shape: T) => z.object(shape).passthrough();

const nonNegative = z.number().finite().nonnegative();
const isoTime = z.string().refine((s) => !Number.isNaN(Date.parse(s)), 'not a date');

const stepRecord = loose({ step: z.enum(ContainerSteps), at: isoTime });

const containerTarget = loose({
  name: z.string(),
  oldId: z.string(),
  oldRuntimeName: z.string(),
  oldImage: z.string(),
  newImage: z.string(),
  newAttempt: nonNegative,
  newId: z.string(),
  rollbackId: z.string(),
  step: z.enum(ContainerSteps),
  steps: z.array(stepRecord),
  exitCode: z.number().optional(),
  error: z.string().optional(),
  downtimeMs: nonNegative.optional(),
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
