/**
 * Caches a promise per key and shares it between concurrent callers. Only successes are kept:
 * a registry that was down, or an id not yet replicated, is asked again next time.
 */
export function memo<K, V>(map: Map<K, Promise<V>>, key: K, load: () => Promise<V>): Promise<V> {
  let p = map.get(key);
  if (!p) {
    p = load();
    map.set(key, p);
    p.catch(() => map.get(key) === p && map.delete(key));
  }
  return p;
}
