import { hashClientSecret } from '../identity/index.ts';
import { usageExitCode, type Command } from './io.ts';

export const identityHelp = `Usage: veil identity hash-secret < secret.txt

Reads a client secret on stdin and prints its scrypt hash for identity.clients.<id>.secretHash.
`;

export const identityCommand: Command = async (args, io) => {
  const wantsHelp = args.some((a) => a === '--help' || a === '-h');
  if (args[0] !== 'hash-secret' || wantsHelp || args.length > 1) {
    io.stdout(identityHelp);
    const sub = args[0] === '--help' || args[0] === '-h' ? undefined : args[0];
    return usageExitCode(wantsHelp || sub === 'help', sub, (s) => s === 'help' || s === 'hash-secret');
  }
  const secret = (await io.readStdin()).replace(/\r?\n$/, '');
  if (secret.length < 16) {
    io.stderr('veil identity: a client secret needs at least 16 characters\n');
    return 2;
  }
  io.stdout(`${await hashClientSecret(secret)}\n`);
  return 0;
};
