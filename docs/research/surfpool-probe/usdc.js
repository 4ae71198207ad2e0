// Put a 6-decimal mint at the canonical USDC address offline via setAccount, then fundToken. node usdc.js
const { Surfnet } = require(process.env.HOME + "/.cache/payrecon-tools/node_modules/surfpool-sdk-linux-x64-gnu/surfpool-sdk.linux-x64-gnu.node");
const web3 = require("@solana/web3.js"); const spl = require("@solana/spl-token");
const s = Surfnet.startWithConfig({ blockProductionMode: "transaction", slotTimeMs: 400 });
const rpc = async (m, p = []) => (await (await fetch(s.rpcUrl, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: m, params: p }) })).json());
const USDC = "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v";
(async () => {
  const data = Buffer.alloc(spl.MINT_SIZE); // 82 bytes
  spl.MintLayout.encode({ mintAuthorityOption: 1, mintAuthority: new web3.PublicKey(s.payer), supply: 0n, decimals: 6, isInitialized: true, freezeAuthorityOption: 0, freezeAuthority: web3.PublicKey.default }, data);
  s.setAccount(USDC, 1_461_600, Array.from(data), spl.TOKEN_PROGRAM_ID.toBase58());
  const w = web3.Keypair.generate().publicKey.toBase58();
  s.fundToken(w, USDC, 25_000_000);
  const r = (await rpc("getTokenAccountsByOwner", [w, { mint: USDC }, { encoding: "jsonParsed" }])).result.value[0];
  console.log("ata", r.pubkey, "=getAta", r.pubkey === s.getAta(w, USDC), JSON.stringify(r.account.data.parsed.info));
  console.log("mint parsed", JSON.stringify((await rpc("getAccountInfo", [USDC, { encoding: "jsonParsed" }])).result.value.data.parsed.info));
  process.exit(0);
})().catch((e) => { console.error(e); process.exit(1); });
