import { hashClientSecret } from '../identity/client-secret.ts';
import type { Command } from './io.ts';

export const identityHelp = `Usage: veil identity hash-secret < secret.txt

Reads a client secret on stdin and prints its scrypt hash for identity.clients.<id>.secretHash.
`;

export const identityCommand: Command = async (args, io) => {
  const wantsHelp = args.some((a) => a === '--help' || a === '-h');
  if (args[0] !== 'hash-secret' || wantsHelp || args.length > 1) {
    io.stdout(identityHelp);
    // help on the group or on hash-secret exits 0; anything else is a usage error
    const known = args[0] === undefined || args[0] === 'help' || args[0] === '--help' || args[0] === '-h' || args[0] === 'hash-secret';
    return known && (wantsHelp || args[0] === 'help') ? 0 : 2;
  }
  const secret = (await io.readStdin()).replace(/\r?\n$/, '');
  if (secret.length < 16) {
    io.stderr('veil identity: a client secret needs at least 16 characters\n');
    return 2;
  }
  io.stdout(`${await hashClientSecret(secret)}\n`);
  return 0;
};
