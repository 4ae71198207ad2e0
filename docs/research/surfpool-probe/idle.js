// does an idle, never-drained surfnet stop answering? node idle.js [seconds] [drain]
const { Surfnet } = require(process.env.HOME + "/.cache/payrecon-tools/node_modules/surfpool-sdk-linux-x64-gnu/surfpool-sdk.linux-x64-gnu.node");
const s = Surfnet.start(); const secs = Number(process.argv[2] || 100);
if (process.argv[3]) setInterval(() => s.drainEvents(), 1000);
const rpc = async (m, p = []) => (await (await fetch(s.rpcUrl, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: m, params: p }), signal: AbortSignal.timeout(3000) })).json());
const t0 = Date.now();
const tick = setInterval(async () => {
  const el = ((Date.now() - t0) / 1000).toFixed(0);
  try { const r = await rpc("getSlot", [{ commitment: "processed" }]); if (el % 10 < 1.01) console.log(`t=${el}s slot=${r.result}`); }
  catch (e) { console.log(`t=${el}s getSlot ${e.name} (getHealth: ${JSON.stringify((await rpc("getHealth").catch(e => ({ e: e.name }))))})`); process.exit(0); }
  if (Date.now() - t0 > secs * 1000) { console.log("still alive at", el, "s"); process.exit(0); }
}, 1000);
