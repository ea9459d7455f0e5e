// Byte sizes for people: parsed from flags (`1Gi`, `500Mi`, `10G`, `1024`) and printed in binary units.
import { AgentError } from './errors.js';

/** Bytes of a size such as `1Gi`, `500Mi`, `10G` or `1024`; InvalidArgument naming the text otherwise. */
export function parseBytes(text: string): number {
  const m = /^(\d+(?:\.\d+)?)\s*(|k|ki|m|mi|g|gi|t|ti)b?$/i.exec(text.trim());
  if (!m) throw new AgentError('InvalidArgument', `invalid size "${text}" (use e.g. 500Mi, 1Gi, 1048576)`);
  const unit = m[2].toLowerCase();
  const pow = { '': 0, k: 1, m: 2, g: 3, t: 4 }[unit[0] ?? ''] ?? 0;
  const base = unit.endsWith('i') ? 1024 : 1000;
  return Math.round(Number(m[1]) * base ** pow);
}

/** Bytes in binary units: `512 B`, `1.5 MiB`. */
export function formatBytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return i === 0 ? `${v} B` : `${v.toFixed(1)} ${units[i]}`;
}
