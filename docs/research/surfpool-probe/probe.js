// Probe surfpool-sdk 1.2.0 + Solana JSON-RPC shapes. Run: node probe.js  (writes out/*.json)
const fs = require("fs");
const path = require("path");
const { Surfnet } = require(process.env.HOME + "/.cache/payrecon-tools/node_modules/surfpool-sdk-linux-x64-gnu/surfpool-sdk.linux-x64-gnu.node");
const web3 = require("@solana/web3.js");
const spl = require("@solana/spl-token");
const OUT = path.join(__dirname, "out"); fs.mkdirSync(OUT, { recursive: true });
const save = (n, v) => fs.writeFileSync(path.join(OUT, n + ".json"), JSON.stringify(v, null, 2));
const now = () => Number(process.hrtime.bigint()) / 1e6;
let URL_;
let id = 0;
async function raw(body) {
  const r = await fetch(URL_, { method: "POST", headers: { "content-type": "application/json" }, body: typeof body === "string" ? body : JSON.stringify(body) });
  const text = await r.text();
  let j; try { j = JSON.parse(text); } catch { j = text; }
  return { status: r.status, body: j };
}
async function rpc(method, params = []) {
  const r = await raw({ jsonrpc: "2.0", id: ++id, method, params });
  return r.body;
}
async function waitSig(sig) {
  for (let i = 0; i < 200; i++) {
    const r = await rpc("getSignatureStatuses", [[sig]]);
    const v = r.result && r.result.value[0];
    if (v && (v.confirmationStatus === "confirmed" || v.confirmationStatus === "finalized")) { if (v.err) throw new Error("tx err " + JSON.stringify(v.err)); return v; }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error("timeout " + sig);
}
async function send(conn, tx, signers) {
  const { blockhash } = await conn.getLatestBlockhash();
  tx.recentBlockhash = blockhash; tx.feePayer = signers[0].publicKey; tx.sign(...signers);
  const sig = await conn.sendRawTransaction(tx.serialize(), { skipPreflight: false });
  await waitSig(sig); return sig;
}
(async () => {
  const mode = process.env.MODE; // undefined = default Surfnet.start()
  let t0 = now();
  const s = mode ? Surfnet.startWithConfig({ blockProductionMode: mode, slotTimeMs: Number(process.env.SLOT_MS || 400) }) : Surfnet.start();
  const tStart = now() - t0;
  URL_ = s.rpcUrl;
  let firstOk; for (;;) { try { const r = await rpc("getSlot"); if (r.result !== undefined) { firstOk = now() - t0; break; } } catch {} await new Promise(r => setTimeout(r, 5)); }
  const info = { mode: mode || "default(start)", startMs: tStart, firstRpcOkMs: firstOk, rpcUrl: s.rpcUrl, wsUrl: s.wsUrl, payer: s.payer };
  console.log(info);
  const conn = new web3.Connection(s.rpcUrl, { commitment: "confirmed", wsEndpoint: s.wsUrl });
  const payer = web3.Keypair.fromSecretKey(Uint8Array.from(s.payerSecretKey));
  const sender = web3.Keypair.generate(), recip = web3.Keypair.generate();
  s.fundSol(sender.publicKey.toBase58(), 2_000_000_000);
  info.senderBalanceAfterFundSol = await rpc("getBalance", [sender.publicKey.toBase58()]);
  info.versionResp = await rpc("getVersion");
  info.slotBefore = (await rpc("getSlot")).result;
  // --- SOL transfers (3 of them, for cursor tests)
  const solSigs = [];
  for (const lam of [100_000_000, 1_000_000, 2_000_000]) {
    solSigs.push(await send(conn, new web3.Transaction().add(web3.SystemProgram.transfer({ fromPubkey: sender.publicKey, toPubkey: recip.publicKey, lamports: lam })), [sender]));
  }
  // --- SPL: real mint (6 decimals) created by tx
  const mintKp = web3.Keypair.generate();
  const rent = await conn.getMinimumBalanceForRentExemption(spl.MINT_SIZE);
  await send(conn, new web3.Transaction().add(
    web3.SystemProgram.createAccount({ fromPubkey: payer.publicKey, newAccountPubkey: mintKp.publicKey, space: spl.MINT_SIZE, lamports: rent, programId: spl.TOKEN_PROGRAM_ID }),
    spl.createInitializeMint2Instruction(mintKp.publicKey, 6, payer.publicKey, null)), [payer, mintKp]);
  const mint = mintKp.publicKey;
  const senderAta = spl.getAssociatedTokenAddressSync(mint, sender.publicKey);
  const recipAta = spl.getAssociatedTokenAddressSync(mint, recip.publicKey);
  // fundToken cheatcode on our own mint
  let fundTokenRes = "ok";
  try { s.fundToken(sender.publicKey.toBase58(), mint.toBase58(), 50_000_000); } catch (e) { fundTokenRes = "ERR " + e.message; }
  info.fundTokenOwnMint = fundTokenRes;
  info.getAtaMatches = s.getAta(sender.publicKey.toBase58(), mint.toBase58()) === senderAta.toBase58();
  info.senderAtaAfterFundToken = await rpc("getTokenAccountBalance", [senderAta.toBase58()]);
  if (fundTokenRes !== "ok") {
    await send(conn, new web3.Transaction().add(spl.createAssociatedTokenAccountIdempotentInstruction(payer.publicKey, senderAta, sender.publicKey, mint),
      spl.createMintToCheckedInstruction(mint, senderAta, payer.publicKey, 50_000_000, 6)), [payer]);
  }
  // fundToken on canonical mainnet USDC mint (offline: mint account may be missing)
  const USDC = "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v";
  try { s.fundToken(recip.publicKey.toBase58(), USDC, 1_000_000); info.fundTokenUsdc = "ok"; } catch (e) { info.fundTokenUsdc = "ERR " + e.message; }
  info.usdcMintAccount = await rpc("getAccountInfo", [USDC, { encoding: "jsonParsed" }]);
  // transferChecked sender->recip, creating recip ATA idempotently (gives innerInstructions)
  const splSig = await send(conn, new web3.Transaction().add(
    spl.createAssociatedTokenAccountIdempotentInstruction(sender.publicKey, recipAta, recip.publicKey, mint),
    spl.createTransferCheckedInstruction(senderAta, mint, recipAta, sender.publicKey, 12_345_678, 6)), [sender]);
  // a plain transfer (non-checked) too
  const splPlainSig = await send(conn, new web3.Transaction().add(spl.createTransferInstruction(senderAta, recipAta, sender.publicKey, 1_000_000)), [sender]);
  info.sigs = { solSigs, splSig, splPlainSig, mint: mint.toBase58(), sender: sender.publicKey.toBase58(), recip: recip.publicKey.toBase58(), senderAta: senderAta.toBase58(), recipAta: recipAta.toBase58() };
  // ---- RPC shapes
  const R = {};
  R.getSlot = await rpc("getSlot");
  R.getSlotFinalized = await rpc("getSlot", [{ commitment: "finalized" }]);
  R.sigsRecipAll = await rpc("getSignaturesForAddress", [recip.publicKey.toBase58()]);
  R.sigsRecipLimit2 = await rpc("getSignaturesForAddress", [recip.publicKey.toBase58(), { limit: 2 }]);
  const all = R.sigsRecipAll.result.map((x) => x.signature);
  R.sigsRecipBefore = await rpc("getSignaturesForAddress", [recip.publicKey.toBase58(), { limit: 2, before: all[1] }]);
  R.sigsRecipUntil = await rpc("getSignaturesForAddress", [recip.publicKey.toBase58(), { until: all[all.length - 2] }]);
  R.sigsRecipAtaAll = await rpc("getSignaturesForAddress", [recipAta.toBase58()]);
  R.sigsMint = await rpc("getSignaturesForAddress", [mint.toBase58()]);
  R.sigsBadBefore = await rpc("getSignaturesForAddress", [recip.publicKey.toBase58(), { before: "1111111111111111111111111111111111111111111111111111111111111111" }]);
  R.sigsUnknownAddr = await rpc("getSignaturesForAddress", [web3.Keypair.generate().publicKey.toBase58()]);
  const cfg = { encoding: "jsonParsed", maxSupportedTransactionVersion: 0, commitment: "confirmed" };
  R.txSol = await rpc("getTransaction", [solSigs[0], cfg]);
  R.txSpl = await rpc("getTransaction", [splSig, cfg]);
  R.txSplPlain = await rpc("getTransaction", [splPlainSig, cfg]);
  R.txSolNoMaxVer = await rpc("getTransaction", [solSigs[0], { encoding: "jsonParsed" }]);
  R.txSolJson = await rpc("getTransaction", [solSigs[0], { encoding: "json", maxSupportedTransactionVersion: 0 }]);
  R.txUnknown = await rpc("getTransaction", ["5".repeat(87), cfg]);
  R.statuses = await rpc("getSignatureStatuses", [[solSigs[0], splSig, "5".repeat(87)], { searchTransactionHistory: true }]);
  R.statusesNoHist = await rpc("getSignatureStatuses", [[solSigs[0], splSig]]);
  const slot = R.txSpl.result.slot;
  R.blockTimeSplSlot = await rpc("getBlockTime", [slot]);
  R.blockTimeSolSlot = await rpc("getBlockTime", [R.txSol.result.slot]);
  R.blockTimeFuture = await rpc("getBlockTime", [slot + 100000]);
  R.block = await rpc("getBlock", [slot, { encoding: "jsonParsed", maxSupportedTransactionVersion: 0, transactionDetails: "signatures", rewards: false }]);
  R.tokenAcctsByOwnerMint = await rpc("getTokenAccountsByOwner", [recip.publicKey.toBase58(), { mint: mint.toBase58() }, { encoding: "jsonParsed" }]);
  R.tokenAcctsByOwnerProg = await rpc("getTokenAccountsByOwner", [sender.publicKey.toBase58(), { programId: spl.TOKEN_PROGRAM_ID.toBase58() }, { encoding: "jsonParsed" }]);
  R.tokenBal = await rpc("getTokenAccountBalance", [recipAta.toBase58()]);
  // batch
  R.batch = await raw([{ jsonrpc: "2.0", id: 1, method: "getSlot" }, { jsonrpc: "2.0", id: 2, method: "getBlockHeight" }]);
  R.batchEmpty = await raw([]);
  R.unknownMethod = await rpc("fooBar");
  R.parseError = await raw("{not json");
  save("info", info); save("rpc", R);
  // ---- timing getTransaction
  const N = 300, ts = [];
  for (let i = 0; i < N; i++) { const a = now(); const r = await rpc("getTransaction", [i % 2 ? splSig : solSigs[0], cfg]); ts.push(now() - a); if (!r.result) throw new Error("null tx"); }
  ts.sort((a, b) => a - b);
  const tim = { n: N, meanMs: ts.reduce((a, b) => a + b) / N, p50: ts[N / 2 | 0], p95: ts[N * 0.95 | 0], max: ts[N - 1] };
  const sg = []; for (let i = 0; i < 100; i++) { const a = now(); await rpc("getSignaturesForAddress", [recip.publicKey.toBase58(), { limit: 1000 }]); sg.push(now() - a); } sg.sort((a,b)=>a-b);
  tim.sigsForAddrP50 = sg[50];
  console.log("timing", tim); save("timing", tim);
  console.log(JSON.stringify(info.sigs));
  process.exit(0);
})().catch((e) => { console.error(e); process.exit(1); });
