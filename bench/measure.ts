/** Runs fn in batches for about `ms` milliseconds after a warm-up; returns operations per second. */
export function opsPerSecond(fn: (i: number) => unknown, opsPerCall = 1, ms = 1000): number {
  const deadline = (t: number) => performance.now() + t;
  let i = 0;
  for (const end = deadline(ms / 4); performance.now() < end;) for (let j = 0; j < 100; j++) fn(i++);
  let calls = 0;
  const start = performance.now();
  const end = start + ms;
  let now = start;
  while (now < end) {
    for (let j = 0; j < 100; j++) fn(i++);
    calls += 100;
    now = performance.now();
  }
  return (calls * opsPerCall) / ((now - start) / 1000);
}

export function fmt(n: number): string {
  return Math.round(n).toLocaleString('en-US');
}

export function ratio(a: number, b: number): string {
  return `${(a / b).toFixed(2)}×`;
}
