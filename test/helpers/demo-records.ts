/** The records `npm run demo` produces to raw.customers (scripts/local-demo.ts), keyed by email: three people in turn. */
export const DEMO_PEOPLE = [
  ['Alice Dupont', 'alice@example.com', '4111-1111-1111-1111'],
  ['Bob Martin', 'bob@example.org', '5500 0000 0000 0004'],
  ['Chloé Bernard', 'chloe@example.net', '6011 0009 9013 9424'],
] as const;

export const demoRecord = (i: number) => {
  const [name, email, card] = DEMO_PEOPLE[i % 3]!;
  return { id: `run-${i}`, email, cards: [{ number: card }], profile: { name, tier: 'gold' } };
};
