/**
 * The keys that occur twice in one object of a JSON text, read from the raw text: JSON.parse keeps
 * the last of two equal keys and hides the first, so a check on its result cannot see them. Keys
 * are compared as decoded (`"service"` and `"\u0073ervice"` are the same key). The text must be
 * valid JSON (the caller parses it first).
 */
export function duplicateKeys(text: string): string[] {
  const duplicates: string[] = [];
  /** the keys seen in each open object; null for an open array */
  const open: (Set<string> | null)[] = [];
  let keyNext = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '"') {
      let end = i + 1;
      while (text[end] !== '"') {
        if (end >= text.length) throw new Error('an unterminated string');
        end += text[end] === '\\' ? 2 : 1;
      }
      const keys = open.at(-1);
      if (keyNext && keys) {
        const key = JSON.parse(text.slice(i, end + 1)) as string;
        if (keys.has(key)) duplicates.push(key);
        keys.add(key);
        keyNext = false;
      }
      i = end;
    } else if (c === '{') {
      open.push(new Set());
      keyNext = true;
    } else if (c === '[') {
      open.push(null);
      keyNext = false;
    } else if (c === '}' || c === ']') {
      open.pop();
      keyNext = false;
    } else if (c === ',') {
      keyNext = Boolean(open.at(-1));
    }
  }
  return duplicates;
}
