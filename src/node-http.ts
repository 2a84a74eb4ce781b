import { createRequire } from 'node:module';

/**
 * Node's http module, required rather than imported: from Node 22 on, an import of node:http reads each
 * of its exports, and its WebSocket ones load the whole of fetch's implementation, some 15 MiB and 25 ms
 * at every start. Import types from node:http as usual (`import type`); take what runs from here.
 */
export const http = createRequire(import.meta.url)('node:http') as typeof import('node:http');
