// HTTP cheatcodes + setAccount/native API checks. node cheat.js
const { Surfnet } = require(process.env.HOME + "/.cache/payrecon-tools/node_modules/surfpool-sdk-linux-x64-gnu/surfpool-sdk.linux-x64-gnu.node");
const web3 = require("@solana/web3.js");
const s = Surfnet.startWithConfig({ blockProductionMode: "transaction", slotTimeMs: 400 });
let id = 0;
const rpc = async (m, p = []) => (await (await fetch(s.rpcUrl, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: ++id, method: m, params: p }) })).json());
const j = (x) => String(JSON.stringify(x)).slice(0, 500);
const USDC = "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v", TOKEN = "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA";
(async () => {
  const w = web3.Keypair.generate().publicKey.toBase58();
  console.log("surfnet_setAccount:", j(await rpc("surfnet_setAccount", [w, { lamports: 123456789 }])));
  console.log("  getBalance:", j((await rpc("getBalance", [w])).result.value));
  console.log("surfnet_setTokenAccount USDC:", j(await rpc("surfnet_setTokenAccount", [w, USDC, { amount: 2500000 }, TOKEN])));
  console.log("  USDC mint account offline:", j((await rpc("getAccountInfo", [USDC, { encoding: "base64" }])).result.value));
  console.log("  getTokenAccountsByOwner USDC jsonParsed:", j((await rpc("getTokenAccountsByOwner", [w, { mint: USDC }, { encoding: "jsonParsed" }])).result.value));
  console.log("surfnet_timeTravel:", j(await rpc("surfnet_timeTravel", [{ absoluteSlot: 5000 }])));
  console.log("  getSlot confirmed after timeTravel:", (await rpc("getSlot", [{ commitment: "confirmed" }])).result, "blockTime(5000)", j(await rpc("getBlockTime", [5000])));
  // native setAccount: (address, lamports, data:number[], owner)
  const a2 = web3.Keypair.generate().publicKey.toBase58();
  s.setAccount(a2, 1_000_000, [1, 2, 3], "11111111111111111111111111111111");
  console.log("native setAccount ->", j((await rpc("getAccountInfo", [a2, { encoding: "base64" }])).result.value));
  try { s.setAccount(a2, 1, new Uint8Array([1]), "11111111111111111111111111111111"); console.log("setAccount Uint8Array ok"); } catch (e) { console.log("setAccount Uint8Array err:", e.message); }
  // native time travel
  console.log("timeTravelToSlot:", j(s.timeTravelToSlot(6000)));
  console.log("drainEvents sample:", j(s.drainEvents().slice(-3)));
  console.log("surfnet_getLocalSignatures:", j(await rpc("surfnet_getLocalSignatures", [])));
  process.exit(0);
})().catch((e) => { console.error(e); process.exit(1); });
