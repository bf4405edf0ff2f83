import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const dir = new URL('../../src/client/', import.meta.url);

/**
 * veil/client is imported by applications: it stays dependency-free (global fetch, no Node-only
 * modules, nothing from the service), so importing it pulls in neither zod nor Fastify nor keys.
 * The Sequelize integration only imports Sequelize's types; the application brings Sequelize.
 */
describe('veil/client dependencies', () => {
  const files = readdirSync(dir).filter((f) => f.endsWith('.ts'));

  it('imports only its own modules (and Sequelize types in sequelize.ts)', () => {
    expect(files).toContain('index.ts');
    for (const file of files) {
      const text = readFileSync(new URL(file, dir), 'utf8');
      for (const m of text.matchAll(/^\s*(import|export)\s+(type\s+)?[^'"]*?from\s+'([^']+)'/gm)) {
        const [, , typeOnly, source] = m;
        const allowed = /^\.\/[a-z-]+\.ts$/.test(source!) || (file === 'sequelize.ts' && source === 'sequelize' && typeOnly !== undefined);
        expect(allowed, `${file} imports ${source}`).toBe(true);
      }
      expect(text, file).not.toMatch(/\bimport\s*\(/);
      expect(text, file).not.toMatch(/\bprocess\./);
    }
  });

  it('is exported as veil/client and veil/client/sequelize, with types', async () => {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
      exports: Record<string, { types: string; default: string }>;
    };
    expect(pkg.exports['./client']).toEqual({ types: './src/client/index.ts', default: './src/client/index.ts' });
    expect(pkg.exports['./client/sequelize']).toEqual({ types: './src/client/sequelize.ts', default: './src/client/sequelize.ts' });
    const viaExport = await import('veil/client');
    const direct = await import('../../src/client/index.ts');
    expect(viaExport.VeilClient).toBe(direct.VeilClient);
  });
});
