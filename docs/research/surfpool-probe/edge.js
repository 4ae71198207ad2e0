// edge cases: limits, v0 tx without maxSupportedTransactionVersion, commitment processed, failed tx. node edge.js
const { Surfnet } = require(process.env.HOME + "/.cache/payrecon-tools/node_modules/surfpool-sdk-linux-x64-gnu/surfpool-sdk.linux-x64-gnu.node");
const web3 = require("@solana/web3.js");
const s = Surfnet.startWithConfig({ blockProductionMode: "transaction", slotTimeMs: 400 });
let id = 0;
const rpc = async (m, p = []) => (await (await fetch(s.rpcUrl, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: ++id, method: m, params: p }) })).json());
const j = (x) => String(JSON.stringify(x)).slice(0, 400);
(async () => {
  const payer = web3.Keypair.fromSecretKey(Uint8Array.from(s.payerSecretKey));
  const conn = new web3.Connection(s.rpcUrl, "confirmed");
  const to = web3.Keypair.generate().publicKey;
  const bh = (await conn.getLatestBlockhash()).blockhash;
  const msg = new web3.TransactionMessage({ payerKey: payer.publicKey, recentBlockhash: bh, instructions: [web3.SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: to, lamports: 1_000_000 })] }).compileToV0Message();
  const vtx = new web3.VersionedTransaction(msg); vtx.sign([payer]);
  const vsig = await conn.sendRawTransaction(vtx.serialize());
  await new Promise((r) => setTimeout(r, 200));
  console.log("v0 getTransaction w/o maxSupportedTransactionVersion:", j(await rpc("getTransaction", [vsig, { encoding: "jsonParsed" }])));
  const v = (await rpc("getTransaction", [vsig, { encoding: "jsonParsed", maxSupportedTransactionVersion: 0 }])).result;
  console.log("v0 with maxSupported: version=", v.version, "accountKeys[0]", j(v.transaction.message.accountKeys[0]), "addressTableLookups", j(v.transaction.message.addressTableLookups), "meta.loadedAddresses", j(v.meta.loadedAddresses));
  console.log("getTransaction commitment processed:", j(await rpc("getTransaction", [vsig, { encoding: "json", maxSupportedTransactionVersion: 0, commitment: "processed" }])));
  console.log("sigsForAddr limit 0:", j(await rpc("getSignaturesForAddress", [to.toBase58(), { limit: 0 }])));
  console.log("sigsForAddr limit 1001:", j(await rpc("getSignaturesForAddress", [to.toBase58(), { limit: 1001 }])));
  console.log("sigsForAddr bad address:", j(await rpc("getSignaturesForAddress", ["notanaddress"])));
  console.log("getTransaction bad sig:", j(await rpc("getTransaction", ["xyz", { encoding: "json" }])));
  console.log("getSignatureStatuses 257 sigs:", j(await rpc("getSignatureStatuses", [Array(257).fill(vsig)])));
  // failed tx: transfer more than balance, skipPreflight
  const poor = web3.Keypair.generate(); s.fundSol(poor.publicKey.toBase58(), 1_000_000);
  const ftx = new web3.Transaction().add(web3.SystemProgram.transfer({ fromPubkey: poor.publicKey, toPubkey: to, lamports: 5_000_000 }));
  ftx.recentBlockhash = (await conn.getLatestBlockhash()).blockhash; ftx.feePayer = poor.publicKey; ftx.sign(poor);
  let fsig; try { fsig = await conn.sendRawTransaction(ftx.serialize(), { skipPreflight: true }); } catch (e) { console.log("send failed tx err:", e.message.slice(0, 300)); }
  await new Promise((r) => setTimeout(r, 200));
  if (fsig) {
    console.log("failed tx status:", j(await rpc("getSignatureStatuses", [[fsig], { searchTransactionHistory: true }])));
    const ft = (await rpc("getTransaction", [fsig, { encoding: "jsonParsed", maxSupportedTransactionVersion: 0 }])).result;
    console.log("failed tx meta:", ft && j({ err: ft.meta.err, status: ft.meta.status, fee: ft.meta.fee, pre: ft.meta.preBalances, post: ft.meta.postBalances }));
    console.log("failed tx in sigsForAddr(to):", j((await rpc("getSignaturesForAddress", [to.toBase58()])).result.map((x) => [x.signature.slice(0, 6), x.err])));
  }
  // preflight failure shape
  const ftx2 = new web3.Transaction().add(web3.SystemProgram.transfer({ fromPubkey: poor.publicKey, toPubkey: to, lamports: 5_000_001 }));
  ftx2.recentBlockhash = (await conn.getLatestBlockhash()).blockhash; ftx2.feePayer = poor.publicKey; ftx2.sign(poor);
  console.log("sendTransaction preflight error:", j(await rpc("sendTransaction", [ftx2.serialize().toString("base64"), { encoding: "base64" }])));
  process.exit(0);
})().catch((e) => { console.error(e); process.exit(1); });
