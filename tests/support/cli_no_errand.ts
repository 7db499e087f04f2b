/** A module that exports no errand instance, for the command line's error test. */
export const answer = 42;
export function greet(name: string): string {
  return `hello ${name}`;
}
