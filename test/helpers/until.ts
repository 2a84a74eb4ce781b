/** Resolves once `condition()` holds, checking every `everyMs`; throws after `timeoutMs`, naming `what`. */
export async function until(condition: () => boolean, what: string, timeoutMs = 10_000, everyMs = 10): Promise<void> {
  for (let waited = 0; waited < timeoutMs; waited += everyMs) {
    if (condition()) return;
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
  throw new Error(`gave up waiting for ${what}`);
}
