// Slot / commitment / blockTime / getBlock behaviour. Run: node slots.js [transaction|clock|manual]
const { Surfnet } = require(process.env.HOME + "/.cache/payrecon-tools/node_modules/surfpool-sdk-linux-x64-gnu/surfpool-sdk.linux-x64-gnu.node");
const web3 = require("@solana/web3.js");
const mode = process.argv[2];
const s = mode ? Surfnet.startWithConfig({ blockProductionMode: mode, slotTimeMs: 100 }) : Surfnet.start();
let id = 0;
const rpc = async (m, p = []) => (await (await fetch(s.rpcUrl, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: ++id, method: m, params: p }) })).json());
const slots = async (tag) => { const o = {}; for (const c of ["processed", "confirmed", "finalized"]) o[c] = (await rpc("getSlot", [{ commitment: c }])).result; o.default = (await rpc("getSlot")).result; o.height = (await rpc("getBlockHeight")).result; console.log(tag, JSON.stringify(o)); return o; };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
(async () => {
  console.log("mode", mode || "default");
  await slots("t0");
  await sleep(1000); await slots("t+1s idle");
  const a = web3.Keypair.generate().publicKey.toBase58();
  s.fundSol(a, 1_000_000_000); await slots("after fundSol");
  const payer = web3.Keypair.fromSecretKey(Uint8Array.from(s.payerSecretKey));
  const conn = new web3.Connection(s.rpcUrl, "confirmed");
  const sigs = [];
  for (let i = 0; i < 3; i++) {
    const tx = new web3.Transaction().add(web3.SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: new web3.PublicKey(a), lamports: 1000 + i }));
    tx.recentBlockhash = (await conn.getLatestBlockhash()).blockhash; tx.feePayer = payer.publicKey; tx.sign(payer);
    sigs.push(await conn.sendRawTransaction(tx.serialize()));
    await sleep(300);
  }
  await slots("after 3 tx");
  const st = await rpc("getSignatureStatuses", [sigs, { searchTransactionHistory: true }]);
  console.log("statuses", JSON.stringify(st.result.value));
  const tx = (await rpc("getTransaction", [sigs[0], { encoding: "jsonParsed", maxSupportedTransactionVersion: 0 }])).result;
  const sfa = (await rpc("getSignaturesForAddress", [a])).result;
  console.log("tx.slot", tx && tx.slot, "tx.blockTime", tx && tx.blockTime, "getBlockTime", JSON.stringify(await rpc("getBlockTime", [tx.slot])), "sigsForAddr blockTimes", JSON.stringify(sfa.map((x) => [x.slot, x.blockTime])));
  for (const cfg of [undefined, { maxSupportedTransactionVersion: 0 }, { encoding: "json", maxSupportedTransactionVersion: 0, transactionDetails: "signatures", rewards: false }, { encoding: "jsonParsed", maxSupportedTransactionVersion: 0, transactionDetails: "full" }]) {
    const b = await rpc("getBlock", cfg ? [tx.slot, cfg] : [tx.slot]);
    console.log("getBlock", JSON.stringify(cfg), JSON.stringify(b).slice(0, 420));
  }
  console.log("getBlocks", JSON.stringify(await rpc("getBlocks", [Math.max(0, tx.slot - 3), tx.slot + 3])));
  console.log("getBlock(tx.slot-1)", JSON.stringify(await rpc("getBlock", [tx.slot - 1, { maxSupportedTransactionVersion: 0, transactionDetails: "signatures" }])).slice(0, 300));
  console.log("getBlock(0)", JSON.stringify(await rpc("getBlock", [0, { maxSupportedTransactionVersion: 0, transactionDetails: "none" }])).slice(0, 300));
  console.log("getBlock(1e9)", JSON.stringify(await rpc("getBlock", [1e9])));
  console.log("getBlockTime(1e9)", JSON.stringify(await rpc("getBlockTime", [1e9])));
  console.log("getFirstAvailableBlock", JSON.stringify(await rpc("getFirstAvailableBlock")));
  console.log("getEpochInfo", JSON.stringify(await rpc("getEpochInfo")));
  console.log("getGenesisHash", JSON.stringify(await rpc("getGenesisHash")));
  console.log("getHealth", JSON.stringify(await rpc("getHealth")));
  console.log("wall clock s", Math.floor(Date.now() / 1000));
  // try to reach finalization
  for (let i = 0; i < 40; i++) { const tx2 = new web3.Transaction().add(web3.SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: new web3.PublicKey(a), lamports: 5000 + i })); tx2.recentBlockhash = (await conn.getLatestBlockhash()).blockhash; tx2.feePayer = payer.publicKey; tx2.sign(payer); await conn.sendRawTransaction(tx2.serialize()); await sleep(30); }
  await sleep(500);
  await slots("after 40 more tx");
  const st2 = await rpc("getSignatureStatuses", [[sigs[0]], { searchTransactionHistory: true }]);
  console.log("status first tx later", JSON.stringify(st2.result.value));
  console.log("getTransaction finalized commitment", JSON.stringify((await rpc("getTransaction", [sigs[0], { encoding: "json", maxSupportedTransactionVersion: 0, commitment: "finalized" }])).result?.slot ?? null));
  console.log("sigsForAddr finalized", JSON.stringify((await rpc("getSignaturesForAddress", [a, { commitment: "finalized", limit: 2 }]))).slice(0, 300));
  process.exit(0);
})().catch((e) => { console.error(e); process.exit(1); });
