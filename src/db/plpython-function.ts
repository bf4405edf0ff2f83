import { createHash } from 'node:crypto';

/** A Python module embedded in PL/Python functions: its source and the class each backend keeps. */
export interface EmbeddedModule {
  name: string;
  source: string;
  /** the class whose instance (constructed with plpy) the function bodies call */
  className: string;
}

export interface PlPythonFunction {
  /** schema-qualified name and argument list, e.g. `veil.protect(class_name text, ...)` */
  signature: string;
  returns: string;
  module: EmbeddedModule;
  /** a Python expression over `_m` (the module's instance) and the function's arguments */
  call: string;
  /** SECURITY DEFINER with a pinned search_path; otherwise the function runs as its caller */
  definer: boolean;
}

export const DOLLAR_TAG = '$veil_py$';

/**
 * The PL/Python source of one function. The module runs once per backend and its instance stays
 * in GD (PL/Python's per-session dictionary) under a key holding the source's hash, so a
 * reinstalled module replaces the old one in live sessions and the instance's HTTP connection
 * and token survive from one call to the next.
 */
export function plPythonBody(fn: Pick<PlPythonFunction, 'module' | 'call'>): string {
  const key = `veil.${fn.module.name}.${createHash('sha256').update(fn.module.source).digest('hex').slice(0, 16)}`;
  return [
    `_m = GD.get(${JSON.stringify(key)})`,
    'if _m is None:',
    `    _ns = {'__name__': ${JSON.stringify(fn.module.name)}}`,
    // a JSON string literal is a valid Python string literal
    `    exec(compile(${JSON.stringify(fn.module.source)}, ${JSON.stringify(fn.module.name)}, 'exec'), _ns)`,
    `    _m = _ns[${JSON.stringify(fn.module.className)}](plpy)`,
    `    GD[${JSON.stringify(key)}] = _m`,
    fn.call,
  ].join('\n');
}

export function createPlPythonFunction(fn: PlPythonFunction): string {
  const body = plPythonBody(fn);
  if (body.includes(DOLLAR_TAG)) throw new Error(`the Python source of ${fn.signature} contains ${DOLLAR_TAG}`);
  const security = fn.definer ? 'SECURITY DEFINER\nSET search_path = pg_catalog, pg_temp' : 'SECURITY INVOKER';
  return `CREATE OR REPLACE FUNCTION ${fn.signature}\nRETURNS ${fn.returns}\nLANGUAGE plpython3u VOLATILE\n${security}\nAS ${DOLLAR_TAG}\n${body}\n${DOLLAR_TAG};\n`;
}
