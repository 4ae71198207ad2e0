// reproduce sendTransaction hang after many txs: node hang.js [mode] [slotTimeMs]
const { Surfnet } = require(process.env.HOME + "/.cache/payrecon-tools/node_modules/surfpool-sdk-linux-x64-gnu/surfpool-sdk.linux-x64-gnu.node");
const web3 = require("@solana/web3.js");
const mode = process.argv[2] || "transaction", stm = Number(process.argv[3] || 400);
const s = Surfnet.startWithConfig({ blockProductionMode: mode, slotTimeMs: stm });
const rpc = async (m, p = [], to = 10000) => (await (await fetch(s.rpcUrl, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: m, params: p }), signal: AbortSignal.timeout(to) })).json());
(async () => {
  const payer = web3.Keypair.fromSecretKey(Uint8Array.from(s.payerSecretKey));
  const to = web3.Keypair.generate().publicKey;
  let bh;
  for (let i = 0; i < 1200; i++) {
    if (process.env.DRAIN && i % 50 === 0) globalThis.drained = (globalThis.drained || 0) + s.drainEvents().length;
    if (i % 50 === 0) { const lb = (await rpc("getLatestBlockhash")).result; bh = lb.value.blockhash; globalThis.last = [i, lb.context.slot]; }
    const tx = new web3.Transaction().add(web3.SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: to, lamports: 1_000_000 + i }));
    tx.recentBlockhash = bh; tx.feePayer = payer.publicKey; tx.sign(payer);
    try { const r = await rpc("sendTransaction", [tx.serialize().toString("base64"), { encoding: "base64" }]); if (!r.result) { console.log("i", i, "error", JSON.stringify(r.error).slice(0, 200)); break; } }
    catch (e) {
      console.log("HANG at i", i, e.name, "last [i,slot] seen", JSON.stringify(globalThis.last));
      try { console.log("  getSlot still answers:", JSON.stringify(await rpc("getSlot", [{ commitment: "processed" }], 3000))); } catch (e2) { console.log("  getSlot also hangs", e2.name); }
      try { console.log("  getHealth:", JSON.stringify(await rpc("getHealth", [], 3000))); } catch (e2) { console.log("  getHealth also hangs", e2.name); }
      break;
    }
  }
  console.log("drained events", globalThis.drained);
  console.log("done; slot", JSON.stringify(await rpc("getSlot", [{ commitment: "processed" }], 3000).catch(e => e.name)));
  process.exit(0);
})();
