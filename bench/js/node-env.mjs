// What the two Node runners (run.mjs, run-browser.mjs) share: the repository's paths, the
// machine and git state their results record, and --help (a script's leading comment block).
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const resultsDir = path.join(root, 'bench/results');

export const cpuModel = () => os.cpus()[0]?.model?.trim() ?? '?';
export const osName = () => `${os.type()} ${os.release()}`;

// The commit the results were measured at, flagged when src/ or bindings/ have uncommitted changes.
export function gitState() {
  try {
    const head = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root, encoding: 'utf8' }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--', 'src', 'bindings'], { cwd: root, encoding: 'utf8' }).trim();
    return dirty ? `${head} + uncommitted changes in src/ or bindings/` : head;
  } catch { return '?'; }
}

// Prints the leading `//` comment block of the script at `moduleUrl` (its usage) and exits.
export function printUsage(moduleUrl) {
  const lines = readFileSync(fileURLToPath(moduleUrl), 'utf8').split('\n');
  const end = lines.findIndex((l) => !l.startsWith('//'));
  console.log(lines.slice(0, end < 0 ? lines.length : end).join('\n'));
  process.exit(0);
}
