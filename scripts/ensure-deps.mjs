#!/usr/bin/env node
// Installs the npm dependencies when they are missing or older than package-lock.json, so that the README's
// quick-start commands work on a fresh clone. Does nothing when node_modules is current.
import { spawnSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const marker = path.join(root, 'node_modules', '.package-lock.json');
const lock = path.join(root, 'package-lock.json');
if (existsSync(marker) && statSync(marker).mtimeMs >= statSync(lock).mtimeMs) process.exit(0);
console.error('ensure-deps: installing npm dependencies (npm ci)');
const r = spawnSync('npm', ['ci', '--no-audit', '--no-fund'], { cwd: root, stdio: 'inherit' });
process.exit(r.status ?? 1);
