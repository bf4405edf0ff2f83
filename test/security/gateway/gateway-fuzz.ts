// A raw-socket fuzzer of `veil gateway`'s request framing, on 127.0.0.1 only, bounded in time.
//   scripts/node22 test/security/gateway/gateway-fuzz.ts --minutes 10 [--seed N]     (npm run fuzz:gateway)
// Its short form runs in `npm test` (gateway-fuzz.test.ts). It starts a real gateway in front of
// the recording upstream (lenient parser), sends mutated requests — framing headers, CL/TE values
// and names, chunk sizes and extensions, line endings, obs-fold, versions, targets, Expect,
// pipelining, split writes — and flags a finding for:
//   - a request the upstream parsed whose response never came back through the gateway (the
//     gateway did not route it as a request of its own: smuggled),
//   - a request the upstream parsed that no route matches (the gateway refuses unmatched ones),
//   - a request on the protecting route whose body holds a selected value in clear,
//   - a request the upstream could not parse, or one forwarded with two framings.
import { normalizeTarget } from '../../../src/gateway/target.ts';
import { compileRoutes, findRoute } from '../../../src/gateway/routes.ts';
import { gatewaySchema } from '../../../src/gateway/gateway-config.ts';
import { bodyOf, headerNames, rawSend, SECRET_CARD, SECRET_EMAIL, securityFixture, type Recorded } from '../../helpers/gateway-security.ts';
import { CARD, customers, EMAIL, gatewaySection, SEC, STATIC } from '../../helpers/gateway-routes.ts';
import { mulberry32 } from '../../helpers/seeded-random.ts';

export const FUZZ_SECTION = gatewaySection(
  [customers(EMAIL, CARD), STATIC, SEC],
  'unmatched: refuse',
  'limits: { bodyReadTimeoutMs: 1000, streamTimeoutMs: 1500 }',
);

export interface FuzzReport {
  seed: number;
  cases: number;
  /** requests written (a case may pipeline several) */
  requests: number;
  upstreamParsed: number;
  /**
   * requests the upstream parsed whose case's connection ended before the gateway answered all it
   * was asked (the client's idle wait or cap ran out, or an exchange was cut on a loaded machine):
   * their response could not come back, so only the other checks judge them
   */
  unanswered: number;
  statuses: Record<string, number>;
  findings: string[];
}

const SECRET_JSON = JSON.stringify({ email: SECRET_EMAIL, card: { number: SECRET_CARD } });
const TE_VALUES = [
  'chunked',
  ' chunked',
  'chunked ',
  '\tchunked',
  'CHUNKED',
  'xchunked',
  'chunked, identity',
  'identity, chunked',
  'gzip, chunked',
  'chunked,chunked',
  '"chunked"',
  'chunk',
  'chunked;q=1',
  'chunked\x0b',
  '',
];
const TE_NAMES = [
  'Transfer-Encoding',
  'transfer-encoding',
  'TRANSFER-ENCODING',
  'Transfer-Encoding ',
  ' Transfer-Encoding',
  'Transfer_Encoding',
  'X-Transfer-Encoding',
];
const CL_VALUES = (n: number) => [
  String(n),
  `0${n}`,
  `+${n}`,
  ` ${n}`,
  `${n} `,
  `${n}, ${n}`,
  `${n + 1}`,
  `${Math.max(0, n - 1)}`,
  '0',
  `-${n}`,
  `${n}.0`,
  `0x${n.toString(16)}`,
];

interface Built {
  bytes: string;
  requests: number;
}

/** One case: a base request and a few mutations, as the bytes to write. */
function buildCase(rand: () => number, n: number, host: string, token: string): Built {
  const pick = <T>(list: readonly T[]): T => list[Math.floor(rand() * list.length)]!;
  const smuggled = `POST /customers HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/json\r\nContent-Length: ${SECRET_JSON.length}\r\n\r\n${SECRET_JSON}`;
  const kind = pick(['get', 'post-cl', 'post-chunked', 'customers', 'static-body'] as const);
  let method = kind === 'get' || kind === 'static-body' ? 'GET' : 'POST';
  // the case's id in every target it writes itself (caseOf), not in the smuggled request
  let target = kind === 'customers' ? `/customers?case=${n}` : kind === 'static-body' ? `/static/${n}` : `/sec/${n}`;
  let version = 'HTTP/1.1';
  const headers: [string, string][] = [['Host', host]];
  let body = kind === 'customers' ? SECRET_JSON : rand() < 0.5 ? smuggled : `payload-${n}`;
  if (kind === 'customers') headers.push(['Authorization', `Bearer ${token}`], ['Content-Type', 'application/json']);
  let chunked = kind === 'post-chunked' || (kind !== 'get' && rand() < 0.3);
  if (kind === 'get') body = '';
  const mutations = 1 + Math.floor(rand() * 3);
  let eol = '\r\n';
  let tail = '';
  let extraRequests = 0;
  let chunkSizeDelta = 0;
  let chunkExt = '';
  let noLastChunk = false;
  for (let m = 0; m < mutations; m++) {
    switch (Math.floor(rand() * 14)) {
      case 0:
        headers.push([pick(TE_NAMES), pick(TE_VALUES)]);
        break;
      case 1:
        headers.push(['Content-Length', pick(CL_VALUES(Buffer.byteLength(body, 'latin1')))]);
        break;
      case 2:
        chunked = !chunked;
        break;
      case 3:
        eol = pick(['\n', '\r', '\r\n', '\r\r\n']);
        break;
      case 4:
        headers.push(['X-Fold', `a${pick(['\r\n ', '\r\n\t', '\n '])}Transfer-Encoding: chunked`]);
        break;
      case 5:
        version = pick(['HTTP/1.0', 'HTTP/1.2', 'HTTP/2.0', 'http/1.1', 'HTTP/1.1 ']);
        break;
      case 6:
        target = pick([
          `http://${host}${target}`,
          `http://evil.example${target}`,
          '*',
          `${target}#x`,
          `${target};x`,
          target.toUpperCase(),
          `/%63ustomers`,
          `/sec/%2e%2e/customers`,
          `/sec/..;/customers`,
          `//customers`,
        ]);
        break;
      case 7:
        headers.push(['Expect', pick(['100-continue', '100-Continue', 'foo'])]);
        break;
      case 8:
        chunkSizeDelta = pick([-1, 1, 2, -2]);
        break;
      case 9:
        chunkExt = pick([';a=b', ';a="b"', ';a', '; a=b', ';a="b\r\nc"', ' ;x']);
        break;
      case 10:
        noLastChunk = true;
        tail = pick(['', smuggled]);
        break;
      case 11:
        tail += rand() < 0.5 ? smuggled : `GET /sec/p${n} HTTP/1.1${eol}Host: ${host}${eol}${eol}`;
        extraRequests++;
        break;
      case 12:
        method = pick(['GET', 'POST', 'PUT', 'DELETE', 'HEAD', 'OPTIONS', 'get', 'CONNECT']);
        break;
      default:
        headers.push([pick(['Transfer-Encoding', 'Content-Length', 'Host']), pick(['chunked', '0', host, '5'])]);
        break;
    }
  }
  let payload = body;
  if (chunked && body !== '') {
    headers.push(['Transfer-Encoding', 'chunked']);
    const cut = Math.floor(rand() * body.length);
    const parts = [body.slice(0, cut), body.slice(cut)].filter((p) => p !== '');
    payload =
      parts.map((p, i) => `${(p.length + (i === 0 ? chunkSizeDelta : 0)).toString(16)}${chunkExt}${eol}${p}${eol}`).join('') +
      (noLastChunk ? '' : `0${eol}${eol}`);
  } else if (body !== '' && !headers.some(([h]) => h.toLowerCase() === 'content-length'))
    headers.push(['Content-Length', String(Buffer.byteLength(body, 'latin1'))]);
  // shuffle the headers after Host: framing headers in any order
  for (let i = headers.length - 1; i > 1; i--) {
    const j = 1 + Math.floor(rand() * i);
    [headers[i], headers[j]] = [headers[j]!, headers[i]!];
  }
  const head = `${method} ${target} ${version}${eol}${headers.map(([k, v]) => `${k}: ${v}${eol}`).join('')}${eol}`;
  return { bytes: head + payload + tail, requests: 1 + extraRequests };
}

/** Runs the fuzzer for `seconds` against a fresh gateway and upstream; never throws for a finding. */
export async function runFuzz(options: { seconds: number; seed?: number; concurrency?: number; log?: (line: string) => void }): Promise<FuzzReport> {
  const seed = options.seed ?? Math.floor(Math.random() * 2 ** 31);
  const rand = mulberry32(seed);
  const f = await securityFixture(FUZZ_SECTION);
  const report: FuzzReport = { seed, cases: 0, requests: 0, upstreamParsed: 0, unanswered: 0, statuses: {}, findings: [] };
  const relayed = new Set<number>();
  /** cases whose connection ended with fewer whole responses than the requests they wrote */
  const shortCases = new Set<number>();
  const routes = compileRoutes(
    gatewaySchema.parse({
      upstream: f.upstreamUrl,
      routes: [
        { name: 'customers', method: 'POST', path: '/customers' },
        { name: 'static', method: 'GET', path: '/static/*' },
        { name: 'sec', method: ['GET', 'POST'], path: '/sec/*' },
      ],
    }),
  );
  const host = `127.0.0.1:${f.port}`;
  const samples = new Map<number, string>();
  const trace: { id: number; bytes: string; reply: string }[] = [];
  const deadline = Date.now() + options.seconds * 1000;
  let n = 0;
  const worker = async () => {
    while (Date.now() < deadline) {
      const id = n++;
      const built = buildCase(rand, id, host, f.tokens.ingest!);
      // split the bytes in up to three writes, a few ms apart
      const cuts = [0, ...[rand(), rand()].map((r) => Math.floor(r * built.bytes.length)).sort((a, b) => a - b), built.bytes.length];
      const parts = cuts
        .slice(1)
        .map((c, i) => built.bytes.slice(cuts[i], c))
        .filter((p) => p !== '');
      // a case ends 200 ms after every response it asked for came in whole (any beyond them come
      // right after), else after 1.5 s without a byte: long enough that a loaded machine's stall
      // is not read as a response the gateway never relayed (seen once at load 4)
      const reply = await rawSend(f.port, parts, { idleMs: 1500, settleMs: 200, gapMs: rand() < 0.3 ? 3 : 0, maxMs: 5000, expect: built.requests });
      report.cases++;
      report.requests += built.requests;
      if (reply.complete < built.requests) shortCases.add(id);
      for (const s of reply.statuses) report.statuses[s] = (report.statuses[s] ?? 0) + 1;
      // every X-Upstream-Seq in the bytes, whatever the framing of the responses around it (HEAD)
      for (const m of reply.text.matchAll(/\r\nX-Upstream-Seq: (\d+)\r\n/gi)) relayed.add(Number(m[1]));
      if (samples.size < 5000) samples.set(id, built.bytes);
      if (process.env.VEIL_FUZZ_TRACE) trace.push({ id, bytes: built.bytes, reply: reply.text });
    }
  };
  try {
    await Promise.all(Array.from({ length: options.concurrency ?? 6 }, worker));
    // a request the gateway sent whose response never came back (a smuggled one) may still be on
    // its way to the upstream: once the gateway has exited, everything it sent has been
    await f.stopGateway();
    const parsed = await f.received(0);
    report.upstreamParsed = parsed.length;
    for (const r of parsed) {
      const cutShort = !relayed.has(r.seq) && shortCases.has(caseOf(r.target) ?? -1);
      if (cutShort) report.unanswered++;
      const finding = judge(r, relayed.has(r.seq) || cutShort, routes);
      if (finding) report.findings.push(`seq ${r.seq} ${r.method} ${JSON.stringify(r.target)}: ${finding}`);
    }
    // a connection closed in the middle of a body (the caller went away, or its body missed the
    // deadline: the gateway cuts the upstream request) is the truncation the gateway means to cause,
    // not a disagreement about framing
    const errors = (await f.upstreamErrors()).filter((e) => e.code !== 'HPE_INVALID_EOF_STATE' && e.code !== 'ECONNRESET');
    if (errors.length)
      report.findings.push(`the upstream could not parse ${errors.length} request(s) the gateway sent: ${[...new Set(errors.map((e) => e.code))].join(', ')}`);
    if (process.env.VEIL_FUZZ_TRACE) {
      const { writeFile } = await import('node:fs/promises');
      await writeFile(process.env.VEIL_FUZZ_TRACE, JSON.stringify({ trace, parsed }, null, 1));
    }
  } finally {
    await f.close();
  }
  return report;
}

/**
 * The case a parsed request came from, by the id its target carries (`/sec/N`, `/static/N`, the
 * pipelined `/sec/pN`, `/customers?case=N`, in any of the target mutations); undefined for the
 * smuggled request and the traversal targets, which carry none and so are always held to a relayed
 * response.
 */
function caseOf(target: string): number | undefined {
  const m = /\/(?:sec|static)\/p?(\d+)(?:[?#;]|$)|\/customers\?case=(\d+)/i.exec(target);
  return m ? Number(m[1] ?? m[2]) : undefined;
}

/**
 * `answered`: the response came back through the gateway, or the request's case ended before the
 * gateway answered everything it asked (nothing could come back). A smuggled request is still
 * caught there: the gateway never wrote its head, so its X-Forwarded-For is missing.
 */
function judge(r: Recorded, answered: boolean, routes: ReturnType<typeof compileRoutes>): string | undefined {
  if (!answered) return 'parsed upstream, but its response never came back through the gateway (not a request the gateway routed)';
  let segments: string[];
  try {
    segments = normalizeTarget(r.target, 'upstream').segments;
  } catch {
    return 'a target the gateway does not route';
  }
  const route = findRoute(routes, r.method, segments);
  if (!route) return 'no route matches it: the gateway refuses unmatched requests';
  if (route.name === 'customers' && (bodyOf(r).includes(SECRET_EMAIL) || bodyOf(r).includes(SECRET_CARD)))
    return 'a selected value reached the upstream in clear';
  const names = headerNames(r);
  if (names.includes('transfer-encoding') && names.includes('content-length')) return 'forwarded with two framings';
  if (names.filter((h) => h === 'x-forwarded-for').length !== 1) return 'not sent by the gateway (its X-Forwarded-For is missing or repeated)';
  return undefined;
}

// the command line: npm run fuzz:gateway
if (import.meta.url === `file://${process.argv[1]}`) {
  const arg = (name: string) => {
    const i = process.argv.indexOf(`--${name}`);
    return i === -1 ? undefined : process.argv[i + 1];
  };
  const seconds = Number(arg('seconds') ?? Number(arg('minutes') ?? 10) * 60);
  const seed = arg('seed') === undefined ? undefined : Number(arg('seed'));
  const log = (line: string) => process.stdout.write(`${line}\n`);
  log(`gateway fuzz: ${seconds} s on 127.0.0.1${seed === undefined ? '' : `, seed ${seed}`}`);
  const report = await runFuzz({ seconds, ...(seed === undefined ? {} : { seed }), log });
  log(
    JSON.stringify(
      {
        seed: report.seed,
        cases: report.cases,
        requestsSent: report.requests,
        upstreamParsed: report.upstreamParsed,
        unanswered: report.unanswered,
        statuses: report.statuses,
        findings: report.findings.length,
      },
      null,
      2,
    ),
  );
  for (const finding of report.findings.slice(0, 50)) log(`FINDING ${finding}`);
  process.exit(report.findings.length ? 1 : 0);
}
