/** What a CLI command may touch; injected so tests run commands in-process. */
export interface CliIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  readStdin: () => Promise<string>;
  env: Readonly<Record<string, string | undefined>>;
  cwd: string;
  now: () => Date;
  /** whether stderr is a terminal: progress lines go there only then */
  stderrIsTTY?: boolean;
}

/**
 * The exit code after a group printed its usage: 0 when help was asked for the group or one of
 * its subcommands, 2 otherwise — help on a subcommand that does not exist is a usage error, so a
 * script learns that it does not exist.
 */
export function usageExitCode(helpAsked: boolean, subcommand: string | undefined, known: (name: string) => boolean): 0 | 2 {
  return helpAsked && (subcommand === undefined || known(subcommand)) ? 0 : 2;
}

/** A subcommand: parsed argv after the subcommand name; resolves to the process exit code. */
export type Command = (args: string[], io: CliIo) => Promise<number>;
