/**
 * Polls `condition` until it holds, for waiting on real sockets and processes. `timeoutMs` is a
 * bound against hanging, not a timing assertion: it fails only when the condition never holds.
 */
export async function waitFor(condition: () => boolean | Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
