import { hashClientSecret } from '../identity/client-secret.ts';
import type { Command } from './io.ts';

export const identityHelp = `Usage: veil identity hash-secret < secret.txt

Reads a client secret on stdin and prints its scrypt hash for identity.clients.<id>.secretHash.
`;

export const identityCommand: Command = async (args, io) => {
  if (args[0] !== 'hash-secret') {
    io.stdout(identityHelp);
    return args[0] === 'help' || args[0] === '--help' ? 0 : 2;
  }
  const secret = (await io.readStdin()).replace(/\r?\n$/, '');
  if (secret.length < 16) {
    io.stderr('veil identity: a client secret needs at least 16 characters\n');
    return 2;
  }
  io.stdout(`${await hashClientSecret(secret)}\n`);
  return 0;
};
