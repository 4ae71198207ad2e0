// transaction-mode slot behaviour: node txmode.js
const { Surfnet } = require(process.env.HOME + "/.cache/payrecon-tools/node_modules/surfpool-sdk-linux-x64-gnu/surfpool-sdk.linux-x64-gnu.node");
const web3 = require("@solana/web3.js");
const s = Surfnet.startWithConfig({ blockProductionMode: "transaction", slotTimeMs: 400 });
const rpc = async (m, p = []) => (await (await fetch(s.rpcUrl, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: m, params: p }) })).json());
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
(async () => {
  const payer = web3.Keypair.fromSecretKey(Uint8Array.from(s.payerSecretKey));
  const conn = new web3.Connection(s.rpcUrl, "confirmed");
  const to = web3.Keypair.generate().publicKey;
  const sl = async () => [(await rpc("getSlot", [{ commitment: "processed" }])).result, (await rpc("getSlot", [{ commitment: "confirmed" }])).result, (await rpc("getSlot")).result];
  console.log("slots p/c/f at start", await sl());
  const sigs = [];
  for (let i = 0; i < 5; i++) {
    const tx = new web3.Transaction().add(web3.SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: to, lamports: 1_000_000 + i }));
    tx.recentBlockhash = (await conn.getLatestBlockhash()).blockhash; tx.feePayer = payer.publicKey; tx.sign(payer);
    sigs.push(await conn.sendRawTransaction(tx.serialize())); await sleep(100);
    console.log("after tx", i, await sl());
  }
  s.fundSol(to.toBase58(), 5); console.log("after fundSol", await sl());
  const st = (await rpc("getSignatureStatuses", [sigs, { searchTransactionHistory: true }])).result.value;
  console.log("tx slots", JSON.stringify(st.map((x) => [x.slot, x.confirmationStatus, x.confirmations])));
  const b = (await rpc("getBlock", [st[0].slot, { commitment: "confirmed", maxSupportedTransactionVersion: 0, encoding: "jsonParsed" }])).result;
  console.log("block of tx0 sigs:", b.transactions.map((t) => [t.transaction.signatures[0].slice(0, 8), t.transaction.message.instructions.map((i) => i.parsed?.type + ":" + JSON.stringify(i.parsed?.info))]));
  console.log("payer", s.payer);
  process.exit(0);
})().catch((e) => { console.error(e); process.exit(1); });
