// getTransaction latency after N txs: node bench-tx.js [N]
const { Surfnet } = require(process.env.HOME + "/.cache/payrecon-tools/node_modules/surfpool-sdk-linux-x64-gnu/surfpool-sdk.linux-x64-gnu.node");
const web3 = require("@solana/web3.js");
const N = Number(process.argv[2] || 300);
const s = Surfnet.startWithConfig({ blockProductionMode: "transaction", slotTimeMs: 400 });
const body = (m, p) => JSON.stringify({ jsonrpc: "2.0", id: 1, method: m, params: p });
const rpc = async (m, p = []) => (await (await fetch(s.rpcUrl, { method: "POST", headers: { "content-type": "application/json" }, body: body(m, p), signal: AbortSignal.timeout(15000) })).json());
const now = () => Number(process.hrtime.bigint()) / 1e6;
const stats = (a) => { a.sort((x, y) => x - y); return { n: a.length, mean: +(a.reduce((x, y) => x + y) / a.length).toFixed(2), p50: +a[a.length >> 1].toFixed(2), p95: +a[Math.floor(a.length * 0.95)].toFixed(2), max: +a[a.length - 1].toFixed(2) }; };
(async () => {
  const payer = web3.Keypair.fromSecretKey(Uint8Array.from(s.payerSecretKey));
  const to = web3.Keypair.generate().publicKey;
  let bh;
  const sigs = []; const ts = [];
  for (let i = 0; i < N; i++) {
    if (i % 100 === 0) s.drainEvents(); // MUST drain: bounded event channel deadlocks the surfnet after ~1024 undrained events
    if (i % 100 === 0) bh = (await rpc("getLatestBlockhash")).result.value.blockhash; // blockhash valid ~150 slots; 1 slot per tx here
    const tx = new web3.Transaction().add(web3.SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: to, lamports: 1_000_000 + i }));
    tx.recentBlockhash = bh; tx.feePayer = payer.publicKey; tx.sign(payer);
    const a = now(); const r = await rpc("sendTransaction", [tx.serialize().toString("base64"), { encoding: "base64" }]); ts.push(now() - a);
    if (!r.result) throw new Error(JSON.stringify(r)); sigs.push(r.result); if (i % 100 === 0) console.error("sent", i, "slot", (await rpc("getSlot", [{ commitment: "processed" }])).result);
  }
  console.log("sendTransaction ms", JSON.stringify(stats(ts)));
  const cfg = { encoding: "jsonParsed", maxSupportedTransactionVersion: 0 };
  for (let w = 0; w < 20; w++) await rpc("getTransaction", [sigs[w], cfg]);
  const g = []; for (let i = 0; i < 500; i++) { const a = now(); const r = await rpc("getTransaction", [sigs[i % N], cfg]); g.push(now() - a); if (!r.result) throw new Error("null"); }
  console.log(`getTransaction(jsonParsed) ms after ${N} txs`, JSON.stringify(stats(g)));
  const f = []; for (let i = 0; i < 50; i++) { const a = now(); const r = await rpc("getSignaturesForAddress", [to.toBase58(), { limit: 1000 }]); f.push(now() - a); if (i == 0) console.log("  sigsForAddr returned", r.result.length); }
  console.log("getSignaturesForAddress(limit 1000) ms", JSON.stringify(stats(f)));
  const st = []; for (let i = 0; i < 50; i++) { const a = now(); await rpc("getSignatureStatuses", [sigs.slice(0, 256), { searchTransactionHistory: true }]); st.push(now() - a); }
  console.log("getSignatureStatuses(256, history) ms", JSON.stringify(stats(st)));
  process.exit(0);
})().catch((e) => { console.error(e); process.exit(1); });
