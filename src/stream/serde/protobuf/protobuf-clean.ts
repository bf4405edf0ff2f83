import type { Retype } from './protobuf-plan.ts';
import type { ProtoSchema } from './protobuf-schema.ts';
import { lenHeader, readSmallVarint, varint, WIRE, wireFields } from './protobuf-wire.ts';

/**
 * The clean schema: the raw one with each retyped field's type made `string` — same name, same
 * number, same label, oneof and json name — and its `packed` option dropped (strings are never
 * packed). Everything else is kept as written: `.proto` text byte for byte outside the edited
 * tokens (comments, options, other messages), a FileDescriptorProto field for field. With no
 * retype (every mapped field already a string) it is the raw schema itself.
 */
export function deriveCleanProtobuf(schema: ProtoSchema, retypes: readonly Retype[]): string {
  if (retypes.length === 0) return schema.text;
  const wanted = new Set(retypes.map((r) => `${r.message}#${r.field}`));
  if (schema.form === 'descriptor') return rewriteDescriptor(Buffer.from(schema.text.trim(), 'base64'), schema.packageName, wanted).toString('base64');
  return rewriteText(schema.text, wanted);
}

// FileDescriptorProto.message_type, DescriptorProto.name / field / nested_type,
// FieldDescriptorProto.number / type / type_name / options, FieldOptions.packed
const FILE_MESSAGE = 4;
const MSG_NAME = 1;
const MSG_FIELD = 2;
const MSG_NESTED = 3;
const FIELD_NUMBER = 3;
const FIELD_TYPE = 5;
const FIELD_TYPE_NAME = 6;
const FIELD_OPTIONS = 8;
const OPTIONS_PACKED = 2;
const TYPE_STRING = 9;

function rewriteDescriptor(file: Buffer, pkg: string, wanted: Set<string>): Buffer {
  return rewriteLen(file, (number, body) => (number === FILE_MESSAGE ? rewriteMessage(body, pkg, wanted) : undefined));
}

function rewriteMessage(msg: Buffer, scope: string, wanted: Set<string>): Buffer {
  let name = '';
  for (const f of wireFields(msg)) if (f.number === MSG_NAME && f.wireType === WIRE.len) name = msg.subarray(f.valueStart, f.end).toString('utf8');
  const fullName = scope ? `${scope}.${name}` : name;
  return rewriteLen(msg, (number, body) => {
    if (number === MSG_NESTED) return rewriteMessage(body, fullName, wanted);
    if (number === MSG_FIELD && wanted.has(`${fullName}#${fieldNumber(body)}`)) return retypeField(body);
    return undefined;
  });
}

function fieldNumber(field: Buffer): number {
  for (const f of wireFields(field))
    if (f.number === FIELD_NUMBER && f.wireType === WIRE.varint) return readSmallVarint(field, f.valueStart, 'a field number')[0];
  return -1;
}

function retypeField(field: Buffer): Buffer {
  const out: Buffer[] = [];
  for (const f of wireFields(field)) {
    if (f.number === FIELD_TYPE || f.number === FIELD_TYPE_NAME) continue;
    if (f.number === FIELD_OPTIONS && f.wireType === WIRE.len) {
      const options = Buffer.concat(
        [...wireFields(field, f.valueStart, f.end)].filter((o) => o.number !== OPTIONS_PACKED).map((o) => field.subarray(o.start, o.end)),
      );
      if (options.length > 0) out.push(lenHeader(FIELD_OPTIONS, options.length), options);
      continue;
    }
    out.push(field.subarray(f.start, f.end));
  }
  out.push(varint((FIELD_TYPE << 3) | WIRE.varint), varint(TYPE_STRING));
  return Buffer.concat(out);
}

/** The message with each LEN field `edit` returns a new body for replaced, the rest copied. */
function rewriteLen(msg: Buffer, edit: (number: number, body: Buffer) => Buffer | undefined): Buffer {
  const out: Buffer[] = [];
  for (const f of wireFields(msg)) {
    const body = f.wireType === WIRE.len ? edit(f.number, msg.subarray(f.valueStart, f.end)) : undefined;
    out.push(body ? Buffer.concat([lenHeader(f.number, body.length), body]) : msg.subarray(f.start, f.end));
  }
  return Buffer.concat(out);
}

interface Token {
  text: string;
  start: number;
  end: number;
}

/** Identifiers (dotted), numbers, strings and single punctuation; comments and spaces skipped. */
function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  const re = /\s+|\/\/[^\n]*|\/\*[\s\S]*?\*\/|("(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')|([A-Za-z_.][A-Za-z0-9_.]*|[0-9][A-Za-z0-9_.+-]*)|([^\s])/gy;
  for (let m = re.exec(text); m && re.lastIndex <= text.length; m = re.exec(text)) {
    if (m[1] ?? m[2] ?? m[3]) tokens.push({ text: m[0], start: m.index, end: re.lastIndex });
    if (re.lastIndex === text.length) break;
  }
  return tokens;
}

const NOT_A_TYPE = new Set([
  'option',
  'reserved',
  'extensions',
  'message',
  'enum',
  'oneof',
  'extend',
  'service',
  'map',
  'optional',
  'required',
  'repeated',
  'syntax',
  'package',
  'import',
  'edition',
  'rpc',
]);

/**
 * `.proto` text with the wanted fields' type tokens replaced by `string` and `packed = …` removed
 * from their options. Scopes are followed by `package`, `message Name {` and braces; a field is
 * `[label] Type name = number`. The result is checked by parsing it again (the caller does).
 */
function rewriteText(text: string, wanted: Set<string>): string {
  const tokens = tokenize(text);
  const edits: { start: number; end: number; text: string }[] = [];
  const scope: (string | null)[] = [];
  let pkg = '';
  const current = () => [pkg, ...scope.filter((s): s is string => s !== null)].filter(Boolean).join('.');
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i]!.text;
    if (t === 'package' && scope.length === 0) pkg = tokens[i + 1]?.text ?? '';
    else if ((t === 'message' || t === 'group') && tokens[i + 2]?.text === '{') {
      scope.push(tokens[i + 1]!.text);
      i += 2;
    } else if (t === '{') scope.push(null);
    else if (t === '}') scope.pop();
    else if (scope.length > 0 && !NOT_A_TYPE.has(t) && tokens[i + 2]?.text === '=' && /^[A-Za-z_]/.test(tokens[i + 1]?.text ?? '')) {
      const number = Number(tokens[i + 3]?.text);
      if (wanted.has(`${current()}#${number}`)) {
        edits.push({ start: tokens[i]!.start, end: tokens[i]!.end, text: 'string' });
        dropPacked(tokens, i + 4, edits);
      }
      i += 3;
    }
  }
  let out = text;
  for (const e of edits.sort((a, b) => b.start - a.start)) out = out.slice(0, e.start) + e.text + out.slice(e.end);
  return out;
}

/** Removes `packed = x` (and one comma beside it) from the `[...]` options starting at token i. */
function dropPacked(tokens: Token[], i: number, edits: { start: number; end: number; text: string }[]): void {
  if (tokens[i]?.text !== '[') return;
  let close = i;
  while (close < tokens.length && tokens[close]!.text !== ']') close++;
  for (let j = i + 1; j < close; j++) {
    if (tokens[j]!.text !== 'packed' || tokens[j + 1]?.text !== '=') continue;
    const only = j === i + 1 && tokens[j + 3]?.text === ']';
    if (only) {
      edits.push({ start: tokens[i]!.start, end: tokens[close]!.end, text: '' });
      return;
    }
    const afterComma = tokens[j + 3]?.text === ',';
    const start = afterComma ? tokens[j]!.start : tokens[j - 1]!.start;
    const end = afterComma ? tokens[j + 4]!.start : tokens[j + 2]!.end;
    edits.push({ start, end, text: '' });
    return;
  }
}
