import type { Writer } from '../../src/audit/record.js';

/** The writer of store calls made directly by tests (the HTTP tests' writes name their real requests). */
export const TEST_WRITER: Writer = { actor: 'test', client: '127.0.0.1', requestId: 'test-request', route: 'test' };
