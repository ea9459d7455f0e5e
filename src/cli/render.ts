// Text rendering of pods and operations for inplacectl.
import { formatBytes } from '../bytes.js';
import { formatDuration } from '../duration.js';
import type { OperationView as Operation } from '../api/convert.js';
import type { ListPodsResponse__Output } from '../gen/inplace/v1/ListPodsResponse.js';

/** A fixed-width table. */
export function table(rows: string[][]): string {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  return rows.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]))).join('  ')).join('\n');
}

/** Pods and their containers. */
export function renderPods(res: ListPodsResponse__Output): string {
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
    rows.push([op.id.slice(0, 8), op.podName, op.state, op.containers.map((c) => c.name).join(','), op.createdAt, op.error ?? '']);
  }
  return table(rows);
}

/** One operation in full. */
export function renderOperation(op: Operation): string {
  const lines = [
    `operation ${op.id}`,
    `  pod:     ${op.podName} (${op.podId.slice(0, 12)}) ip ${op.podIp || '-'}`,
    `  state:   ${op.state}${op.cancelRequested ? ' (cancel requested)' : ''}`,
    `  created: ${op.createdAt}${op.finishedAt ? `   finished: ${op.finishedAt} (${formatDuration(Date.parse(op.finishedAt) - Date.parse(op.createdAt))})` : ''}`,
  ];
  if (op.error) lines.push(`  error:   ${op.error}`);
  if (op.reason) lines.push(`  reason:  ${op.reason}`);
  if (op.state === 'Succeeded') lines.push(`  pod:     ${podCheck(op)}`);
  for (const c of op.containers) {
    lines.push(`  container ${c.name}: ${c.step}`);
    lines.push(`    image ${c.oldImage}${c.newImage !== c.oldImage ? ` -> ${c.newImage}` : ' (same)'}`);
    lines.push(`    id    ${c.oldId.slice(0, 12)} -> ${c.newId ? c.newId.slice(0, 12) : '-'}${c.rollbackId ? `   rolled back to ${c.rollbackId.slice(0, 12)}` : ''}`);
    if (c.downtimeMs !== undefined) lines.push(`    down  ${formatDuration(c.downtimeMs)} (stop call to the replacement's start)`);
    if (c.traffic) lines.push(`    traffic ${c.traffic}`);
    if (c.unservedMs !== undefined) lines.push(`    no ready endpoint ${formatDuration(c.unservedMs)} (a Service of the pod had none)`);
    for (const st of c.steps) if (st.detail) lines.push(`    ${st.step.toLowerCase()}: ${st.detail}`);
    if (c.exitCode !== undefined) lines.push(`    replacement exit code ${c.exitCode}`);
    if (c.error) lines.push(`    error ${c.error}`);
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

/** What was compared about the pod after a successful restart, and whether it changed. */
export function podCheck(op: Operation): string {
  const after = op.podAfter;
  if (!after) return `${op.podName}: not read again after the restart (sandbox and IP not compared)`;
  const parts: string[] = [];
  parts.push(after.podId === op.podId ? `sandbox ${op.podId.slice(0, 12)} unchanged` : `sandbox CHANGED ${op.podId.slice(0, 12)} -> ${after.podId.slice(0, 12)}`);
  if (!op.podIp && !after.podIp) parts.push('no IP before or after (no network of its own to compare)');
  else if (op.podIp === after.podIp) parts.push(`IP ${after.podIp} unchanged`);
  else parts.push(`IP CHANGED ${op.podIp || 'none'} -> ${after.podIp || 'none'}`);
  return `${op.podName}: ${parts.join(', ')}`;
}

/**
 * The line printed when a restart ends: on success the time from submit to the last container verified
 * (with how much of it was the min-ready wait), each container's downtime, and what was compared about
 * the pod; otherwise the state, reason and error.
 */
export function restartSummary(op: Operation): string {
  if (op.state !== 'Succeeded') {
    const reason = op.reason ? ` [${op.reason}]` : '';
    return `operation ${op.id} ${op.state}${reason}: ${op.error ?? op.containers.find((c) => c.error)?.error ?? 'no reason given'}`;
  }
  const took = op.finishedAt ? formatDuration(Date.parse(op.finishedAt) - Date.parse(op.createdAt)) : '?';
  const minReady = op.applied.minReadyMs ?? 0;
  const wait = minReady > 0 ? `, of which ${formatDuration(minReady * op.containers.length)} the min-ready wait` : '';
  const parts = op.containers.map(
    (c) => `${c.name} ${c.oldId.slice(0, 12)} -> ${(c.newId ?? '').slice(0, 12)} (${c.newImage}, down ${c.downtimeMs !== undefined ? formatDuration(c.downtimeMs) : 'unknown'})`,
  );
  return `restarted in place in ${took} (submit to verified${wait}): ${parts.join(', ')}\npod ${podCheck(op)}`;
}

/**
 * One line describing what changed since the previous view of an operation (undefined: nothing new), timed
 * from the operation's creation to the change.
 */
export function progressLine(prev: Operation | undefined, cur: Operation): string | undefined {
  const at = formatDuration(Math.max(0, Date.parse(cur.updatedAt) - Date.parse(cur.createdAt))).padStart(7);
  const out: string[] = [];
  const backFromVerify = prev?.state === 'Verifying' && cur.state === 'Recreating';
  if ((!prev || prev.state !== cur.state) && !backFromVerify) out.push(`${at}  ${cur.state.toLowerCase()}${cur.state === 'Pending' ? ' (waiting for earlier operations on this pod)' : ''}`);
  for (const p of cur.pulls ?? []) {
    const before = prev?.pulls?.find((x) => x.image === p.image);
    if (before && before.done === p.done && before.bytesDone === p.bytesDone) continue;
    if (p.done) out.push(`${at}    ${p.image}: ${p.pulled ? `pulled${p.bytesTotal ? ` (${formatBytes(p.bytesTotal)})` : ''}` : 'present'}`);
    else if (p.bytesDone > 0) out.push(`${at}    ${p.image}: ${formatBytes(p.bytesDone)}${p.bytesTotal ? ` / ${formatBytes(p.bytesTotal)}` : ''}`);
  }
  for (const c of cur.containers) {
    const before = prev?.containers.find((p) => p.name === c.name);
    if (before?.step === c.step) continue;
    if (c.step === 'Waiting') continue;
    const detail =
      c.step === 'Created' ? ` ${(c.newId ?? '').slice(0, 12)} (${c.newImage})` : c.step === 'RolledBack' || c.step === 'Failed' ? `: ${c.error ?? ''}` : '';
    out.push(`${at}    ${c.name}: ${c.step.toLowerCase()}${detail}`);
  }
  return out.length ? out.join('\n') : undefined;
}
