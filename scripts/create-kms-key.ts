// scripts/create-kms-key.ts ALIAS — makes sure an AWS KMS key with the alias ALIAS (e.g. alias/veil)
// exists at $VEIL_KMS_ENDPOINT (else AWS's) in $VEIL_KMS_REGION: for docker-compose.yml's moto
// KMS and for trying VEIL_KMS=aws-kms locally. Prints the key id; an existing alias is left alone.
import { CreateAliasCommand, CreateKeyCommand, DescribeKeyCommand, KMSClient } from '@aws-sdk/client-kms';

const alias = process.argv[2];
if (!alias?.startsWith('alias/')) {
  console.error('usage: create-kms-key.ts alias/NAME');
  process.exit(2);
}
const client = new KMSClient({
  region: process.env.VEIL_KMS_REGION ?? process.env.AWS_REGION ?? 'us-east-1',
  ...(process.env.VEIL_KMS_ENDPOINT ? { endpoint: process.env.VEIL_KMS_ENDPOINT } : {}),
});
try {
  const existing = await client.send(new DescribeKeyCommand({ KeyId: alias }));
  console.log(existing.KeyMetadata!.KeyId);
  console.error(`${alias} exists`);
} catch (e) {
  if ((e as Error).name !== 'NotFoundException') throw e;
  const created = await client.send(new CreateKeyCommand({ Description: 'veil key-encryption key' }));
  await client.send(new CreateAliasCommand({ AliasName: alias, TargetKeyId: created.KeyMetadata!.KeyId! }));
  console.log(created.KeyMetadata!.KeyId);
  console.error(`${alias} created`);
}
client.destroy();
