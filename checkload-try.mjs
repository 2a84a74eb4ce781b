// throwaway: node checkload-try.mjs <url> seconds  -> sends /check at 64 connections
import { Pool } from 'undici';
const [url, seconds] = [process.argv[2], Number(process.argv[3] ?? 8)];
const body = JSON.stringify({ principal: { attributes: { role: 'reader' } }, resource: { attributes: { id: 'doc-1' } }, action: 'read' });
const pool = new Pool(url, { connections: 64 });
const until = performance.now() + seconds * 1000; let n = 0;
await Promise.all(Array.from({ length: 64 }, async () => { while (performance.now() < until) { const r = await pool.request({ path: '/check', method: 'POST', body, headers: { 'content-type': 'application/json' } }); await r.body.dump(); n++; } }));
console.log('answers', n); await pool.close();
