// Text rendering of pods and operations for inplacectl.
import { formatDuration } from '../duration.js';
import type { OperationView as Operation } from '../api/convert.js';
import type { PodListView } from '../api/convert.js';
import { stateText, stepText } from './progress.js';

/** A fixed-width table. */
export function table(rows: string[][]): string {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  return rows.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]))).join('  ')).join('\n');
}

/** The message of an error without a leading copy of its reason (which is printed beside it, in brackets). */
export function withoutReason(message: string, reason: string | undefined): string {
  return reason && message.startsWith(`${reason}: `) ? message.slice(reason.length + 2) : message;
}

/** Pods and their containers (containers in the order the agent sends them: by name). */
export function renderPods(res: PodListView): string {
  const rows = [['POD', 'POD ID', 'IP', 'CONTAINER', 'CONTAINER ID', 'STATE', 'IMAGE']];
  for (const p of res.pods) {
    if (p.containers.length === 0) rows.push([p.name, p.id.slice(0, 12), p.ip || '-', '-', '-', p.state, '-']);
    for (const c of p.containers) rows.push([p.name, p.id.slice(0, 12), p.ip || '-', c.name, c.id.slice(0, 12), c.state, c.image]);
  }
  return table(rows);
}

/** A list of operations, newest first. */
export function renderOperations(ops: Operation[]): string {
  const rows = [['OPERATION', 'POD', 'STATE', 'CONTAINERS', 'CREATED', 'ERROR']];
  for (const op of ops) {
    rows.push([op.id.slice(0, 8), op.podName, op.state, op.containers.map((c) => c.name).join(','), op.createdAt, op.error ? withoutReason(op.error, op.reason) : '']);
  }
  return table(rows);
}

/** One operation in full. */
export function renderOperation(op: Operation): string {
  const lines = [
    `operation ${op.id}`,
    `  pod:     ${op.podName} (${op.podId.slice(0, 12)}) ip ${op.podIp || '-'}`,
    `  state:   ${stateText(op.state)}${op.cancelRequested ? ' (cancel requested)' : ''}`,
    `  created: ${op.createdAt}${op.finishedAt ? `   finished: ${op.finishedAt} (${formatDuration(Date.parse(op.finishedAt) - Date.parse(op.createdAt))})` : ''}`,
  ];
  if (op.reason) lines.push(`  reason:  ${op.reason}`);
  if (op.error) lines.push(`  error:   ${withoutReason(op.error, op.reason)}`);
  if (op.state === 'Succeeded') lines.push(`  after:   ${podCheck(op, false)}`);
  for (const c of op.containers) {
    lines.push(`  container ${c.name}: ${stepText(c.step)}`);
    lines.push(`    image ${c.oldImage}${c.newImage !== c.oldImage ? ` -> ${c.newImage}` : ' (same)'}`);
    lines.push(`    id    ${c.oldId.slice(0, 12)} -> ${c.newId ? c.newId.slice(0, 12) : '-'}${c.rollbackId ? `   rolled back to ${c.rollbackId.slice(0, 12)}` : ''}`);
    if (c.downtimeMs !== undefined) lines.push(`    down  ${formatDuration(c.downtimeMs)} (stop call to the replacement's start)`);
    if (c.exitCode !== undefined) lines.push(`    replacement exit code ${c.exitCode}`);
    if (c.error) lines.push(`    error ${withoutReason(c.error, c.reason)}`);
  }
  return lines.join('\n');
}

/** What a dry run would do, container by container. */
export function renderPlan(op: Operation): string {
  const lines = [`would restart in pod ${op.podName} (${op.podId.slice(0, 12)}), one container at a time:`];
  op.containers.forEach((c, i) => {
    const image = c.newImage !== c.oldImage ? `${c.oldImage} -> ${c.newImage}` : `${c.oldImage} (same image)`;
    lines.push(`  ${i + 1}. ${c.name} ${c.oldId.slice(0, 12)}: ${image}`);
  });
  lines.push('nothing was changed (dry run)');
  return lines.join('\n');
}

/** What was compared about the pod after a successful restart, and whether it changed (named: led by the pod's name). */
export function podCheck(op: Operation, named = true): string {
  const after = op.podAfter;
  const lead = named ? `${op.podName}: ` : '';
  if (!after) return `${lead}not read again after the restart (sandbox and IP not compared)`;
  const parts: string[] = [];
  parts.push(after.podId === op.podId ? `sandbox ${op.podId.slice(0, 12)} unchanged` : `sandbox CHANGED ${op.podId.slice(0, 12)} -> ${after.podId.slice(0, 12)}`);
  if (!op.podIp && !after.podIp) parts.push('no IP before or after (no network of its own to compare)');
  else if (op.podIp === after.podIp) parts.push(`IP ${after.podIp} unchanged`);
  else parts.push(`IP CHANGED ${op.podIp || 'none'} -> ${after.podIp || 'none'}`);
  return `${lead}${parts.join(', ')}`;
}

/**
 * The line printed when a restart ends: on success the time from submit to the last container verified
 * (with how much of it was the min-ready wait), each container's downtime, and what was compared about
 * the pod; otherwise the state, reason and error.
 */
export function restartSummary(op: Operation): string {
  if (op.state !== 'Succeeded') {
    const reason = op.reason ? ` [${op.reason}]` : '';
    return `operation ${op.id} ${op.state}${reason}: ${withoutReason(op.error ?? op.containers.find((c) => c.error)?.error ?? 'no reason given', op.reason)}`;
  }
  const took = op.finishedAt ? formatDuration(Date.parse(op.finishedAt) - Date.parse(op.createdAt)) : '?';
  const minReady = op.applied.minReadyMs ?? 0;
  const wait = minReady > 0 ? `, of which ${formatDuration(minReady * op.containers.length)} the min-ready wait` : '';
  const parts = op.containers.map(
    (c) => `${c.name} ${c.oldId.slice(0, 12)} -> ${(c.newId ?? '').slice(0, 12)} (${c.newImage}, down ${c.downtimeMs !== undefined ? formatDuration(c.downtimeMs) : 'unknown'})`,
  );
  return `restarted in place in ${took} (submit to verified${wait}): ${parts.join(', ')}\npod ${podCheck(op)}`;
}
