import pino, { type DestinationStream, type Logger } from 'pino';

/** pino with every place a secret or value could appear redacted. */
export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: 'veil' },
      serializers: {
        // the path only: a query string could carry a token or secret someone put there
        req: (req: { method?: string; url?: string; id?: string }) => ({ method: req.method, path: String(req.url ?? '').split('?')[0], id: req.id }),
      },
      redact: {
        paths: [
          'req.headers.authorization',
          'req.headers.cookie',
          'req.headers["proxy-authorization"]',
          'headers.authorization',
          'body',
          'req.body',
          '*.client_secret',
          '*.access_token',
          '*.value',
        ],
        censor: '[REDACTED]',
      },
    },
    destination,
  );
}
