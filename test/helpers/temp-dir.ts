import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * For the enclosing `describe`: returns a maker of temporary directories (`<tmp>/<prefix>XXXXXX`)
 * and removes every one it made in an `after` hook, so a test run leaves nothing in the temp dir.
 */
export function useTempDirs(prefix: string): () => string {
  const dirs: string[] = [];
  after(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });
  return () => {
    const dir = mkdtempSync(join(tmpdir(), prefix));
    dirs.push(dir);
    return dir;
  };
}
