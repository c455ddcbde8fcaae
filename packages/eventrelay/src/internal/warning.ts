type EmitWarning = (message: string, options: { type: string; code: string }) => void;

/**
 * Reports `message` as a warning named `EventRelayWarning` with `code`: a process warning
 * (`process.on('warning')`, printed by Node) where the runtime has `process.emitWarning` (Node,
 * Bun, Deno), else one `console.warn` line with the same name, code and message (Cloudflare
 * Workers without `nodejs_compat`, Vercel Edge, where there is no `process` to ask).
 */
export function emitWarning(message: string, code: string): void {
  const runtime = (globalThis as { process?: { emitWarning?: EmitWarning } }).process;
  if (typeof runtime?.emitWarning === 'function') runtime.emitWarning(message, { type: 'EventRelayWarning', code });
  else console.warn(`EventRelayWarning [${code}]: ${message}`);
}
