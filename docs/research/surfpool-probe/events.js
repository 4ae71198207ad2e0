// which simnet events accumulate (idle and per tx): node events.js
const { Surfnet } = require(process.env.HOME + "/.cache/payrecon-tools/node_modules/surfpool-sdk-linux-x64-gnu/surfpool-sdk.linux-x64-gnu.node");
const web3 = require("@solana/web3.js");
const count = (ev) => { const c = {}; for (const e of ev) c[e.kind] = (c[e.kind] || 0) + 1; return JSON.stringify(c); };
(async () => {
  for (const [name, s] of [["start()", Surfnet.start()], ["transaction/400", Surfnet.startWithConfig({ blockProductionMode: "transaction", slotTimeMs: 400 })], ["clock/100", Surfnet.startWithConfig({ blockProductionMode: "clock", slotTimeMs: 100 })]]) {
    await new Promise((r) => setTimeout(r, 3000));
    console.log(name, "idle 3s:", count(s.drainEvents()));
    const payer = web3.Keypair.fromSecretKey(Uint8Array.from(s.payerSecretKey));
    const conn = new web3.Connection(s.rpcUrl, "confirmed");
    for (let i = 0; i < 10; i++) { const tx = new web3.Transaction().add(web3.SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: web3.Keypair.generate().publicKey, lamports: 1_000_000 })); tx.recentBlockhash = (await conn.getLatestBlockhash()).blockhash; tx.feePayer = payer.publicKey; tx.sign(payer); await conn.sendRawTransaction(tx.serialize()); }
    const ev = s.drainEvents(); console.log(name, "10 tx:", count(ev), "sample:", JSON.stringify(ev.find((e) => e.kind === "transactionProcessed") || ev[0]).slice(0, 300));
  }
  process.exit(0);
})();
