import { GatewayError } from './errors.ts';

/**
 * The request target as the gateway routes and forwards it. One normal form, so that the path the
 * gateway matched is the path the upstream reads: whatever a framework would read differently
 * (encoded slashes, dot segments, `;` parameters, case) is either brought to one spelling here or
 * refused — never forwarded as an alias that routes past a protecting route.
 */
export interface Target {
  /**
   * The path to forward: unreserved characters percent-decoded (`/%63ustomers` → `/customers`),
   * other percent-encodings in upper-case hex; `;` parameters kept only when `params` is set.
   */
  path: string;
  /** the path's segments without their `;` parameters, percent-decoded (UTF-8): what routes match */
  segments: string[];
  /** some segment carries a `;` parameter (`/customers;jsessionid=1`) */
  params: boolean;
  /** `?` and the query as sent, or '' */
  query: string;
}

const UNRESERVED = /[A-Za-z0-9._~-]/;
/** encoded characters some servers decode before routing: slash, backslash, NUL, `;` */
const REFUSED_ENCODED = new Set(['2F', '5C', '00', '3B']);

const targetInvalid = (why: string) => new GatewayError('REQUEST_TARGET_INVALID', `the request target ${why}`);
const notCanonical = (why: string) => new GatewayError('PATH_NOT_CANONICAL', `${why}: the gateway does not route it`);

/**
 * The target of a request line (`req.url`) in its normal form, or a refusal: REQUEST_TARGET_INVALID
 * for asterisk-form, authority-form, fragments and absolute-form whose authority is not the Host
 * header (RFC 9112 §3.2.2 lets the target win, but the upstream gets the gateway's own Host: the
 * two must not disagree); PATH_NOT_CANONICAL for what the gateway does not route.
 */
export function normalizeTarget(raw: string, host: string | undefined): Target {
  let target = raw;
  if (!target.startsWith('/')) {
    const absolute = /^https?:\/\/([^/?#]*)(.*)$/i.exec(target);
    if (!absolute) throw targetInvalid('is neither a path nor an absolute URL');
    const authority = absolute[1]!;
    if (authority.includes('@')) throw targetInvalid('holds user information');
    if (host === undefined || authority.toLowerCase() !== host.toLowerCase()) throw targetInvalid('names another authority than the Host header');
    target = absolute[2] || '/';
    if (!target.startsWith('/')) target = `/${target}`;
  }
  if (target.includes('#')) throw targetInvalid('holds a fragment');
  const q = target.indexOf('?');
  const rawPath = q === -1 ? target : target.slice(0, q);
  const query = q === -1 ? '' : target.slice(q);
  if (rawPath.includes('\\')) throw notCanonical('the path holds a backslash');
  const path = normalizeEncoding(rawPath);
  const params = path.includes(';');
  const segments =
    path === '/'
      ? []
      : path
          .slice(1)
          .split('/')
          .map((s) => decodeSegment(s.split(';')[0]!));
  if (segments.some((s) => s === '' || s === '.' || s === '..'))
    throw notCanonical('the path has an empty or dot segment (also once decoded or without its ; parameters)');
  return { path, segments, params, query };
}

/** Unreserved characters decoded, the rest of the percent-encodings upper-cased; malformed or refused ones throw. */
function normalizeEncoding(path: string): string {
  if (!path.includes('%')) return path;
  let out = '';
  for (let i = 0; i < path.length; i++) {
    const c = path[i]!;
    if (c !== '%') {
      out += c;
      continue;
    }
    const hex = path.slice(i + 1, i + 3).toUpperCase();
    if (!/^[0-9A-F]{2}$/.test(hex)) throw notCanonical('the path holds a malformed percent-encoding');
    if (REFUSED_ENCODED.has(hex)) throw notCanonical('the path holds an encoded slash, backslash, NUL or semicolon');
    const decoded = String.fromCharCode(parseInt(hex, 16));
    out += UNRESERVED.test(decoded) ? decoded : `%${hex}`;
    i += 2;
  }
  return out;
}

function decodeSegment(segment: string): string {
  if (!segment.includes('%')) return segment;
  try {
    return decodeURIComponent(segment);
  } catch {
    throw notCanonical('the path holds percent-encoded bytes that are not UTF-8');
  }
}
