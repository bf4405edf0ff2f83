/**
 * An application that stores customers in PostgreSQL through Sequelize, with veil protecting the
 * personal fields before every INSERT/UPDATE and unprotecting them after reads (README.md here).
 *
 *   POST /customers          a customer object, or a list of them (one /transform call)
 *   GET  /customers          every customer, cleartext (one /transform call)
 *   GET  /customers?email=…  lookup by email: the email is protected first (deterministic AES-SIV)
 *   GET  /customers/:id      one customer
 *   PATCH /customers/:id     change fields
 */
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { Sequelize } from 'sequelize';
import { VeilClient, VeilClientError } from 'veil/client';
import { defineCustomer } from './customers.ts';

const env = process.env;
const veilUrl = env.VEIL_URL ?? 'http://127.0.0.1:8080';
const secret = env.VEIL_CLIENT_SECRET ?? readFileSync(env.VEIL_CLIENT_SECRET_FILE ?? '.veil/dev-client.secret', 'utf8').trim();
const client = new VeilClient({ url: veilUrl, clientId: env.VEIL_CLIENT_ID ?? 'veil-dev', clientSecret: secret });

// logging: false — Sequelize would otherwise log every statement with its values
const sequelize = new Sequelize(env.DATABASE_URL ?? env.VEIL_PG_URL ?? 'postgres://postgres@127.0.0.1:15432/postgres', { logging: false });
const Customer = defineCustomer(sequelize, client, { protect: env.PROTECT_ROLE ?? 'ingest', unprotect: env.READ_ROLE ?? 'fraud' });
await Customer.sync();

const WRITABLE = ['email', 'cardNumber', 'nationalId', 'name', 'plan'] as const;

async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://app');
  const id = /^\/customers\/(\d+)$/.exec(url.pathname)?.[1];
  if (url.pathname === '/customers' && req.method === 'POST') {
    const body = await readJson(req);
    if (Array.isArray(body))
      return send(
        res,
        201,
        (await Customer.bulkCreate(body.map(pick))).map((c) => c.toJSON()),
      );
    return send(res, 201, (await Customer.create(pick(body))).toJSON());
  }
  if (url.pathname === '/customers' && req.method === 'GET') {
    const email = url.searchParams.get('email');
    // equal emails protect equally (AES-SIV), so the lookup compares protected values
    const where =
      email === null
        ? {}
        : { email: (await client.protect([{ className: 'Customer', propertyName: 'email', value: email }], { role: env.PROTECT_ROLE ?? 'ingest' }))[0]! };
    return send(
      res,
      200,
      (await Customer.findAll({ where, order: [['id', 'ASC']] })).map((c) => c.toJSON()),
    );
  }
  if (id && req.method === 'GET') {
    const customer = await Customer.findByPk(Number(id));
    return customer ? send(res, 200, customer.toJSON()) : send(res, 404, { code: 'NOT_FOUND' });
  }
  if (id && req.method === 'PATCH') {
    const customer = await Customer.findByPk(Number(id));
    if (!customer) return send(res, 404, { code: 'NOT_FOUND' });
    return send(res, 200, (await customer.update(pick(await readJson(req)))).toJSON());
  }
  send(res, 404, { code: 'NOT_FOUND' });
}

function pick(input: unknown): Record<string, unknown> {
  const object = (typeof input === 'object' && input !== null ? input : {}) as Record<string, unknown>;
  return Object.fromEntries(WRITABLE.filter((k) => k in object).map((k) => [k, object[k]]));
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return JSON.parse(Buffer.concat(chunks).toString('utf8'));
}

function send(res: ServerResponse, status: number, body: unknown, type = 'application/json'): void {
  res.writeHead(status, { 'content-type': type }).end(JSON.stringify(body));
}

const server = createServer((req, res) => {
  handle(req, res).catch((e: unknown) => {
    if (e instanceof VeilClientError) {
      // code, pointer and retriable only: a VeilClientError never holds a value
      const status = e.status !== undefined && e.status < 500 ? e.status : 502;
      return send(res, status, { code: e.code, pointer: e.pointer, retriable: e.retriable }, 'application/problem+json');
    }
    if ((e as Error)?.name === 'SequelizeValidationError') return send(res, 400, { code: 'VALIDATION_FAILED' }, 'application/problem+json');
    if (e instanceof SyntaxError) return send(res, 400, { code: 'REQUEST_MALFORMED' }, 'application/problem+json');
    // a database error may quote values: its name only
    console.error(`app-layer: unexpected ${(e as Error)?.name ?? 'error'}`);
    send(res, 500, { code: 'INTERNAL' }, 'application/problem+json');
  });
});
const port = Number(env.PORT ?? 3000);
server.listen(port, '127.0.0.1', () => console.error(`app-layer example on http://127.0.0.1:${port} (veil at ${veilUrl})`));
const stop = () => server.close(() => void sequelize.close().then(() => process.exit(0)));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
