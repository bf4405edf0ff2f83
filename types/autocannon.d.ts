// The slice of autocannon's API that bench/http.ts uses (the package ships no types).
declare module 'autocannon' {
  interface Options {
    url: string;
    method?: string;
    connections?: number;
    duration?: number;
    pipelining?: number;
    headers?: Record<string, string>;
    body?: string;
  }
  interface Result {
    requests: { average: number };
    latency: { p50: number; p99: number; average: number };
    non2xx: number;
    errors: number;
  }
  export default function autocannon(options: Options): Promise<Result>;
}
