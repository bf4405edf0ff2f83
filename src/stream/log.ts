/** The structured log of the protect pipelines and the unprotect responder (pino's shape); never a record's contents. */
export interface StreamLog {
  debug?(obj: Record<string, unknown>, msg: string): void;
  info(obj: Record<string, unknown>, msg: string): void;
  warn(obj: Record<string, unknown>, msg: string): void;
  error(obj: Record<string, unknown>, msg: string): void;
}
