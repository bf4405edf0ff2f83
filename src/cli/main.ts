import { configCommand } from './config-command.ts';
import { dbCommand } from './db-command.ts';
import { demoCommand } from './demo-command.ts';
import { discoverCommand } from './discover-command.ts';
import { gatewayCommand } from './gateway-command.ts';
import type { CliIo, Command } from './io.ts';
import { keysCommand } from './keys-command.ts';
import { transformCommand } from './transform-command.ts';
import { serveCommand } from './serve-command.ts';
import { identityCommand } from './identity-command.ts';
import { streamCommand } from './stream-command.ts';
import { storeCommand } from './store-command.ts';
import { subjectsCommand } from './subjects-command.ts';
import { installKafkaDenied, installLastResort } from './last-resort.ts';
import { secretsOf } from '../kafka/index.ts';

export const mainHelp = `Usage: veil <command> [options]

Commands:
  serve       run the HTTP service (npm start)
  stream      run Kafka pipelines: 'veil stream protect'
  gateway     run the reverse proxy that protects and unprotects JSON fields of an application
  demo        protect and unprotect sample values offline, on the embedded defaults
  transform   run a transform request body through the engine (offline)
  config      validate a configuration; provision its keys
  discover    find the fields of a topic, table or file that hold personal data; propose a draft
  keys        create, rotate, import and list keys in the local keystore
  subjects    erase a data subject (crypto-shredding), its status, verify an erasure receipt
  identity    hash a client secret for the configuration
  store       the shared control store on Kafka: 'veil store migrate' copies a data dir into it
  db          PostgreSQL triggers: 'veil db install' prints or applies schema veil
  help        this text

'veil <command> --help' explains a command.
`;

const COMMANDS: Record<string, Command> = {
  serve: serveCommand,
  demo: demoCommand,
  identity: identityCommand,
  stream: streamCommand,
  gateway: gatewayCommand,
  transform: transformCommand,
  config: configCommand,
  discover: discoverCommand,
  keys: keysCommand,
  db: dbCommand,
  store: storeCommand,
  subjects: subjectsCommand,
};

export async function main(argv: string[], io: CliIo): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === 'help' || name === '--help' || name === '-h') {
    io.stdout(mainHelp);
    return name === undefined ? 2 : 0;
  }
  const command = COMMANDS[name];
  if (!command) {
    io.stderr(`veil: unknown command; run 'veil help'\n`);
    return 2;
  }
  return command(rest, io);
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

if (import.meta.main) {
  installLastResort((line) => process.stderr.write(line));
  installKafkaDenied((line) => process.stderr.write(line), secretsOf(process.env));
  const io: CliIo = {
    stdout: (t) => process.stdout.write(t),
    stderr: (t) => process.stderr.write(t),
    readStdin,
    env: process.env,
    cwd: process.cwd(),
    now: () => new Date(),
    stderrIsTTY: process.stderr.isTTY === true,
  };
  process.exitCode = await main(process.argv.slice(2), io);
}
