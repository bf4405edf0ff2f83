/** What `veil db configure` stores in veil.settings. */
export interface DbCredentials {
  veilUrl: string;
  clientId: string;
  clientSecret: string;
  /** the veil role the triggers and veil.protect use (every writer protects with it) */
  protectRole: string;
  tokenUrl?: string;
  timeoutMs?: number;
  /** veil serve's Unix socket (VEIL_DB_SOCKET) as the database server sees it: Protect goes over it; '' clears it */
  socketPath?: string;
  /** with socketPath: the trigger may protect with keys veil leases (docs/database.md, "Leased keys") */
  socketLease?: boolean;
}

/**
 * A psql script that stores the credentials. The values travel as COPY data, not in a statement's
 * text, so statement logging (log_statement, log_min_duration_statement) and pg_stat_activity
 * never show the secret.
 */
export function configureSql(c: DbCredentials): string {
  for (const [name, value] of Object.entries(c)) {
    if (typeof value === 'string' && /[\r\n\0]/.test(value)) throw new Error(`${name} must be one line`);
  }
  if (!/^https?:\/\//.test(c.veilUrl)) throw new Error('the veil URL must be http(s)');
  if (c.tokenUrl !== undefined && !/^https?:\/\//.test(c.tokenUrl)) throw new Error('the token URL must be http(s)');
  if (c.socketPath !== undefined && c.socketPath !== '' && (!c.socketPath.startsWith('/') || Buffer.byteLength(c.socketPath) > 107)) {
    throw new Error('the socket path must be absolute and at most 107 bytes');
  }
  const csv = (v: string | number | undefined) => (v === undefined ? '' : `"${String(v).replaceAll('"', '""')}"`);
  const row = [c.veilUrl, c.clientId, c.clientSecret, c.protectRole, c.tokenUrl, c.timeoutMs ?? 5000].map(csv).join(',');
  return [
    'CREATE TEMPORARY TABLE veil_credentials_in (veil_url text, client_id text, client_secret text, protect_role text, token_url text, timeout_ms integer) ON COMMIT DROP;',
    'COPY veil_credentials_in FROM STDIN WITH (FORMAT csv);',
    row,
    '\\.',
    'SELECT veil.configure(veil_url, client_id, client_secret, protect_role, token_url, timeout_ms) FROM veil_credentials_in;',
    ...(c.socketPath === undefined
      ? []
      : [`SELECT veil.configure_socket(${c.socketPath === '' ? 'NULL' : `'${c.socketPath.replaceAll("'", "''")}'`}, lease => ${c.socketLease === true});`]),
    '',
  ].join('\n');
}
