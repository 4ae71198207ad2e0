// getBlock / finality / slot-rate probe. Run: node block.js [transaction|clock|manual] [slotTimeMs]
const { Surfnet } = require(process.env.HOME + "/.cache/payrecon-tools/node_modules/surfpool-sdk-linux-x64-gnu/surfpool-sdk.linux-x64-gnu.node");
const web3 = require("@solana/web3.js");
const mode = process.argv[2], stm = Number(process.argv[3] || 400);
const s = mode ? Surfnet.startWithConfig({ blockProductionMode: mode, slotTimeMs: stm }) : Surfnet.start();
let id = 0;
const rpc = async (m, p = []) => (await (await fetch(s.rpcUrl, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: ++id, method: m, params: p }) })).json());
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const slot = async (c = "processed") => (await rpc("getSlot", [{ commitment: c }])).result;
(async () => {
  const a0 = await slot(); await sleep(2000); const a1 = await slot();
  console.log(`mode=${mode || "default"} slotTimeMs=${mode ? stm : "-"} idle slots/2s=${a1 - a0} (from ${a0})`);
  const payer = web3.Keypair.fromSecretKey(Uint8Array.from(s.payerSecretKey));
  const conn = new web3.Connection(s.rpcUrl, "confirmed");
  const to = web3.Keypair.generate().publicKey;
  const tx = new web3.Transaction().add(web3.SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: to, lamports: 1_000_000 }));
  tx.recentBlockhash = (await conn.getLatestBlockhash()).blockhash; tx.feePayer = payer.publicKey; tx.sign(payer);
  const t = Date.now(); const sig = await conn.sendRawTransaction(tx.serialize());
  let st; for (let i = 0; i < 400; i++) { st = (await rpc("getSignatureStatuses", [[sig]])).result.value[0]; if (st) break; await sleep(10); }
  console.log("visible in statuses after ms", Date.now() - t, JSON.stringify(st));
  await sleep(50);
  const tr = (await rpc("getTransaction", [sig, { encoding: "json", maxSupportedTransactionVersion: 0 }])).result;
  const txSlot = tr.slot;
  console.log("tx slot", txSlot, "tx.blockTime", tr.blockTime, "getBlockTime", (await rpc("getBlockTime", [txSlot])).result, "now", Math.floor(Date.now() / 1000));
  for (const c of ["confirmed", "finalized"]) {
    const b = await rpc("getBlock", [txSlot, { commitment: c, encoding: "json", maxSupportedTransactionVersion: 0, transactionDetails: "signatures", rewards: false }]);
    console.log(`getBlock commitment=${c} (before finalization)`, JSON.stringify(b).slice(0, 500));
  }
  // push finalization: wait or send txs
  for (let i = 0; i < 100 && (await slot("finalized")) < txSlot; i++) {
    if (mode === "manual") break;
    const t2 = new web3.Transaction().add(web3.SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: to, lamports: 10 + i }));
    t2.recentBlockhash = (await conn.getLatestBlockhash()).blockhash; t2.feePayer = payer.publicKey; t2.sign(payer);
    await conn.sendRawTransaction(t2.serialize()); await sleep(100);
  }
  console.log("finalized slot now", await slot("finalized"));
  const b = await rpc("getBlock", [txSlot, { encoding: "json", maxSupportedTransactionVersion: 0, transactionDetails: "signatures", rewards: false }]);
  console.log("getBlock default commitment (after finalization)", JSON.stringify(b).slice(0, 600));
  const bf = await rpc("getBlock", [txSlot, { encoding: "jsonParsed", maxSupportedTransactionVersion: 0 }]);
  console.log("getBlock full jsonParsed tx[0].meta.preBalances", JSON.stringify(bf.result?.transactions?.[0]?.meta?.preBalances), "blockTime", bf.result?.blockTime, "keys", Object.keys(bf.result || {}));
  const sfa = (await rpc("getSignaturesForAddress", [to.toBase58(), { limit: 200 }])).result;
  console.log("sigsForAddr oldest entry", JSON.stringify(sfa[sfa.length - 1]));
  const st3 = (await rpc("getSignatureStatuses", [[sig], { searchTransactionHistory: true }])).result.value[0];
  console.log("status now", JSON.stringify(st3));
  process.exit(0);
})().catch((e) => { console.error(e); process.exit(1); });
