/** A URL as the forwarder shows it (the CLI, the PostgreSQL store's errors): the password replaced by `***`. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password !== '') parsed.password = '***';
    return parsed.toString();
  } catch {
    return 'a URL that does not parse';
  }
}
