/** What a CLI command may touch; injected so tests run commands in-process. */
export interface CliIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  readStdin: () => Promise<string>;
  env: Readonly<Record<string, string | undefined>>;
  cwd: string;
  now: () => Date;
}

/** A subcommand: parsed argv after the subcommand name; resolves to the process exit code. */
export type Command = (args: string[], io: CliIo) => Promise<number>;
