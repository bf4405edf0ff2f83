import { type ErrorCode } from '../../src/errors/catalog.ts';

/**
 * The authorization matrix of config/example.yaml, written by hand from the file (not derived
 * from the engine):
 *
 *   rightsContexts                      grants
 *     ingest   (Role: ingest)           Protect, Pseudonymize on Customer.*
 *     support  (Role: support)          Protect, Unprotect on Customer.email; Mask on Customer.cardNumber
 *     fraud    (Role: fraud)            Protect, Unprotect on Customer.*
 *     none     (no rights context names it)
 *
 *   Customer properties                 configured actions
 *     email                             Protect, Unprotect (aes-siv)
 *     cardNumber                        Protect, Unprotect (ff1), Mask (card-mask)
 *     nationalId                        Protect, Unprotect (ff1)
 *     name                              Protect, Unprotect (aes-gcm), Pseudonymize (hmac)
 *     segmentKey                        Protect (hmac), unprotect: none
 *
 * The engine checks grants before field configuration, so a granted but unconfigured action is
 * ACTION_NOT_CONFIGURED and an ungranted one ACTION_NOT_GRANTED whether configured or not.
 */
export type Outcome = 'ok' | Extract<ErrorCode, 'ACTION_NOT_GRANTED' | 'ACTION_NOT_CONFIGURED' | 'RIGHTS_CONTEXT_UNMATCHED'>;
export const OK = 'ok';
export const DENIED = 'ACTION_NOT_GRANTED';
export const NO_SEQUENCE = 'ACTION_NOT_CONFIGURED';
export const NO_RIGHTS = 'RIGHTS_CONTEXT_UNMATCHED';

export const ROLES = ['ingest', 'support', 'fraud', 'none'] as const;
export const ACTIONS = ['Protect', 'Unprotect', 'Mask', 'Pseudonymize'] as const;
export const PROPERTIES = ['email', 'cardNumber', 'nationalId', 'name', 'segmentKey'] as const;
export type Role = (typeof ROLES)[number];
export type Action = (typeof ACTIONS)[number];
export type Property = (typeof PROPERTIES)[number];

export const EXPECTED: Record<Role, Record<Action, Record<Property, Outcome>>> = {
  ingest: {
    Protect: { email: OK, cardNumber: OK, nationalId: OK, name: OK, segmentKey: OK },
    Unprotect: { email: DENIED, cardNumber: DENIED, nationalId: DENIED, name: DENIED, segmentKey: DENIED },
    Mask: { email: DENIED, cardNumber: DENIED, nationalId: DENIED, name: DENIED, segmentKey: DENIED },
    Pseudonymize: { email: NO_SEQUENCE, cardNumber: NO_SEQUENCE, nationalId: NO_SEQUENCE, name: OK, segmentKey: NO_SEQUENCE },
  },
  support: {
    Protect: { email: OK, cardNumber: DENIED, nationalId: DENIED, name: DENIED, segmentKey: DENIED },
    Unprotect: { email: OK, cardNumber: DENIED, nationalId: DENIED, name: DENIED, segmentKey: DENIED },
    Mask: { email: DENIED, cardNumber: OK, nationalId: DENIED, name: DENIED, segmentKey: DENIED },
    Pseudonymize: { email: DENIED, cardNumber: DENIED, nationalId: DENIED, name: DENIED, segmentKey: DENIED },
  },
  fraud: {
    Protect: { email: OK, cardNumber: OK, nationalId: OK, name: OK, segmentKey: OK },
    Unprotect: { email: OK, cardNumber: OK, nationalId: OK, name: OK, segmentKey: NO_SEQUENCE },
    Mask: { email: DENIED, cardNumber: DENIED, nationalId: DENIED, name: DENIED, segmentKey: DENIED },
    Pseudonymize: { email: DENIED, cardNumber: DENIED, nationalId: DENIED, name: DENIED, segmentKey: DENIED },
  },
  none: {
    Protect: { email: NO_RIGHTS, cardNumber: NO_RIGHTS, nationalId: NO_RIGHTS, name: NO_RIGHTS, segmentKey: NO_RIGHTS },
    Unprotect: { email: NO_RIGHTS, cardNumber: NO_RIGHTS, nationalId: NO_RIGHTS, name: NO_RIGHTS, segmentKey: NO_RIGHTS },
    Mask: { email: NO_RIGHTS, cardNumber: NO_RIGHTS, nationalId: NO_RIGHTS, name: NO_RIGHTS, segmentKey: NO_RIGHTS },
    Pseudonymize: { email: NO_RIGHTS, cardNumber: NO_RIGHTS, nationalId: NO_RIGHTS, name: NO_RIGHTS, segmentKey: NO_RIGHTS },
  },
};

export const CLEAR: Record<Property, string> = {
  email: 'matrix.person@example.org',
  cardNumber: '5500-0055-5555-5559',
  nationalId: 'AB123456Z',
  name: 'Matrix Person',
  segmentKey: 'segment-7',
};
