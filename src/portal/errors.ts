import { layerErrorType, layerFaultType } from '../engine/index.ts';
import { PORTAL_ERRORS } from '../errors/codes.ts';

export type PortalErrorCode = keyof typeof PORTAL_ERRORS;

/** An error of the admin portal: one of its codes, with the status, title and retriable of its catalog. */
export class PortalError extends layerErrorType(PORTAL_ERRORS) {}

/**
 * The portal's faults: what its metrics scraper and its drafts raise for the page that handles
 * them (a scrape's failure shown as a reason that holds nothing the endpoint sent, a redirect when
 * nothing is left to map). Never answered as they are: the portal's error page shows only codes of
 * the catalog.
 */
export const PORTAL_FAULTS = {
  /** a metrics URL is, or resolves to, a link-local or metadata address (metrics-address.ts) */
  METRICS_ADDRESS_REFUSED: { retriable: false },
  /** a metrics endpoint answered something other than Prometheus text; the message names the line (prometheus-text.ts) */
  NOT_PROMETHEUS_TEXT: { retriable: false },
  /** a scrape got an answer veil cannot use (an HTTP error status, too large); the message is the reason shown (pipeline-metrics.ts) */
  SCRAPE_UNUSABLE: { retriable: true },
  /** a findings draft has no finding left to map: every path is mapped already or cannot be (unmapped-draft.ts) */
  NOTHING_TO_MAP: { retriable: false },
} as const;

export type PortalFaultCode = keyof typeof PORTAL_FAULTS;

/** A fault of the portal: one of the codes above, a message that holds no value and nothing an endpoint sent. */
export class PortalFault extends layerFaultType(PORTAL_FAULTS) {}
