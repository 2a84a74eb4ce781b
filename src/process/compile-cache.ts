import module from 'node:module';

/** What Node 22.10 and later add to `node:module` for its compile cache; Node 20 has neither. */
interface CompileCacheFunctions {
  getCompileCacheDir?: () => string | undefined;
  flushCompileCache?: () => void;
}

const compileCache = module as unknown as CompileCacheFunctions;

/** Whether this Node can write its compile cache when asked (22.10 and later). */
export const COMPILE_CACHE_WRITABLE = typeof compileCache.flushCompileCache === 'function' && typeof compileCache.getCompileCacheDir === 'function';

/**
 * Writes Node's compile cache of the modules loaded so far, when it is on (NODE_COMPILE_CACHE names a
 * directory, on Node 22.10 or later), and returns its directory; undefined when it is off. Node would
 * write it only at a natural exit, which a server stopped by a signal never reaches. A directory the
 * process may not write is left as it is: the cache already there is still read.
 */
export function writeCompileCache(): string | undefined {
  const directory = compileCache.getCompileCacheDir?.();
  if (directory === undefined) return undefined;
  compileCache.flushCompileCache?.();
  return directory;
}
