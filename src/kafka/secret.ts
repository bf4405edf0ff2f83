import { inspect } from 'node:util';

const REDACTED = '[redacted]';

/**
 * A credential (a SASL password, an OAuth client secret, a key's password) that cannot be printed
 * by accident: String(), JSON.stringify, util.inspect and pino all see `[redacted]`. Only
 * `reveal()` gives the text, and only the client adapters call it, where a client library takes it.
 */
export class Secret {
  readonly #text: string;

  constructor(text: string) {
    this.#text = text;
  }

  reveal(): string {
    return this.#text;
  }

  /** whether `text` occurs in this secret or this secret in `text` (a check before an error is shown) */
  occursIn(text: string): boolean {
    return this.#text.length > 0 && text.includes(this.#text);
  }

  toString(): string {
    return REDACTED;
  }

  toJSON(): string {
    return REDACTED;
  }

  [inspect.custom](): string {
    return REDACTED;
  }
}
