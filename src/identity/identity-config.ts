import { z } from 'zod';
import { keyIdSchema, nameSchema, pointerOf, type ConfigIssue } from '../engine/index.ts';
import { isAdminRole } from './admin-roles.ts';

/** `scrypt$N$r$p$salt$hash` (base64url salt and hash) as written by `veil identity hash-secret`. */
const secretHash = z
  .string()
  .regex(/^scrypt\$\d+\$\d+\$\d+\$[A-Za-z0-9_-]{16,}\$[A-Za-z0-9_-]{32,}$/, 'must be an scrypt hash from `veil identity hash-secret`');

/** The configuration's `identity` section: tokens veil issues, its clients, external providers. */
export const identitySchema = z.strictObject({
  /** `iss` of the tokens veil issues; default: the service's own base URL */
  issuer: z.string().min(1).optional(),
  /** `aud` veil issues and requires on /transform tokens */
  audience: z.string().min(1).default('veil'),
  tokenTtlSeconds: z.number().int().min(30).max(86_400).default(900),
  /** keystore id of the token signing key (type jwt-es256), created on first start */
  signingKey: keyIdSchema.default('veil-token-signing'),
  clients: z
    .record(
      z.string().regex(/^[A-Za-z0-9._-]{1,64}$/, 'client ids are 1-64 of A-Z a-z 0-9 . _ -'),
      z.strictObject({
        description: z.string().optional(),
        secretHash,
        roles: z.array(nameSchema).max(64),
      }),
    )
    .default({}),
  external: z
    .array(
      z.strictObject({
        issuer: z.string().min(1),
        audience: z.string().min(1),
        jwksUrl: z.url({ protocol: /^https?$/ }),
        /** dotted path of the claim holding the roles, e.g. realm_access.roles (Keycloak) */
        rolesClaim: z
          .string()
          .regex(/^[A-Za-z0-9_:-]+(\.[A-Za-z0-9_:-]+)*$/)
          .default('roles'),
        algorithms: z
          .array(z.enum(['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA']))
          .min(1)
          .default(['RS256', 'ES256']),
      }),
    )
    .default([]),
});

export type IdentityConfig = z.infer<typeof identitySchema>;

/**
 * Cross-checks of the identity section against the rest of the configuration, pointers relative
 * to the section: a client role no rights context uses and that is not an admin portal role
 * (warning), a signing key reference that is
 * not of type jwt-es256 (error).
 */
export function identityIssues(
  identity: IdentityConfig,
  context: { roles: ReadonlySet<string>; keyType(reference: string): string | undefined },
): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  for (const [id, client] of Object.entries(identity.clients)) {
    client.roles.forEach((role, i) => {
      if (!context.roles.has(role) && !isAdminRole(role))
        issues.push({ severity: 'warning', pointer: pointerOf(['clients', id, 'roles', i]), message: `role "${role}" is used by no rights context` });
    });
  }
  const signing = context.keyType(identity.signingKey);
  if (signing !== undefined && signing !== 'jwt-es256')
    issues.push({ severity: 'error', pointer: '/signingKey', message: `key ${identity.signingKey} must be of type jwt-es256` });
  return issues;
}
