import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { VeilError } from '../engine/index.ts';
import { DoorError } from '../errors/door-errors.ts';

type Send = (reply: FastifyReply, error: VeilError, req: FastifyRequest) => FastifyReply;

/**
 * 404 and 405 from the request line alone, before any body is read: a method a path does not
 * support — any method Node parses, QUERY and PROPFIND included — gets 405 with the path's
 * Allow header (RFC 9110 §15.5.6), an unknown path 404, and neither has its body parsed (a QUERY
 * with no JSON body used to get a 400 from the JSON parser instead). The methods of each path
 * are those its routes were registered with, so Allow cannot drift from the routes.
 * Register before any route.
 */
export function registerRouting(app: FastifyInstance, send: Send): void {
  const methods = new Map<string, string[]>();
  app.addHook('onRoute', (route) => {
    const list = methods.get(route.url) ?? [];
    for (const m of [route.method].flat()) if (!list.includes(m)) list.push(m);
    methods.set(route.url, list);
  });

  const refuse = (req: FastifyRequest, reply: FastifyReply): FastifyReply => {
    const path = req.url.split('?')[0]!;
    const allowed = methods.get(path);
    if (allowed && !allowed.includes(req.method)) {
      reply.header('allow', allowed.join(', '));
      return send(reply, new DoorError('METHOD_NOT_ALLOWED', `${path} supports ${allowed.join(', ')}`), req);
    }
    return send(reply, new VeilError('NOT_FOUND', 'no such resource'), req);
  };
  // the not-found route is the one without a url; it runs onRequest hooks like any route
  app.addHook('onRequest', async (req, reply) => {
    if (req.routeOptions.url === undefined) return refuse(req, reply);
  });
  app.setNotFoundHandler(refuse);
}
