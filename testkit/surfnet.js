// A local Solana cluster for the tests (testkit/src/surfnet.rs drives it): surfpool's
// `Surfnet` (npm surfpool-sdk-linux-x64-gnu 1.2.0, a real JSON-RPC server on loopback, offline)
// started in transaction mode (one slot per transaction), and payments made with Solana's own
// libraries (@solana/web3.js 1, @solana/spl-token 0.4). Commands come one JSON object a line
// on stdin; each answer is one JSON line on stdout ({"ok": …} or {"error": "…"}). The first
// line out is {"rpcUrl": …}. Exits when stdin closes (surfpool 1.2.0 has no stop()).
//
// surfpool 1.2.0 stops answering when its event channel fills: the events are drained every
// 250 ms (docs/research/surfpool.md, "Deadlock").
"use strict";
const path = require("path");
const modules = process.env.SOLANA_NODE_MODULES;
const { Surfnet } = require(
  path.join(modules, "surfpool-sdk-linux-x64-gnu/surfpool-sdk.linux-x64-gnu.node"),
);
const web3 = require(path.join(modules, "@solana/web3.js"));
const spl = require(path.join(modules, "@solana/spl-token"));

const net = Surfnet.startWithConfig({ blockProductionMode: "transaction", slotTimeMs: 400 });
setInterval(() => net.drainEvents(), 250);
const conn = new web3.Connection(net.rpcUrl, "confirmed");
const payer = web3.Keypair.fromSecretKey(Uint8Array.from(net.payerSecretKey));
const wallets = new Map(); // name -> Keypair

function wallet(name) {
  let k = wallets.get(name);
  if (!k) {
    k = web3.Keypair.generate();
    wallets.set(name, k);
    net.fundSol(k.publicKey.toBase58(), 100 * web3.LAMPORTS_PER_SOL);
  }
  return k;
}

// A mint at `address` (a fresh one when absent), `decimals`, the payer its authority: offline
// there is no USDC, so the tests write its account (docs/research/surfpool.md, §1).
function mint(address, decimals, token2022) {
  const program = token2022 ? spl.TOKEN_2022_PROGRAM_ID : spl.TOKEN_PROGRAM_ID;
  const at = address || web3.Keypair.generate().publicKey.toBase58();
  const data = Buffer.alloc(spl.MINT_SIZE);
  spl.MintLayout.encode({
    mintAuthorityOption: 1, mintAuthority: payer.publicKey, supply: 0n, decimals,
    isInitialized: true, freezeAuthorityOption: 0, freezeAuthority: web3.PublicKey.default,
  }, data);
  net.setAccount(at, 1_461_600, Array.from(data), program.toBase58());
  return at;
}

async function send(instructions, signers, skipPreflight) {
  const tx = new web3.Transaction().add(...instructions);
  tx.recentBlockhash = (await conn.getLatestBlockhash()).blockhash;
  tx.feePayer = signers[0].publicKey;
  tx.sign(...signers);
  const sig = await conn.sendRawTransaction(tx.serialize(), { skipPreflight: !!skipPreflight });
  // Polled, not confirmTransaction: that waits on a websocket surfpool's wsUrl does not serve.
  for (let i = 0; i < 500; i++) {
    const { value } = await conn.getSignatureStatuses([sig]);
    if (value[0]) return sig;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`transaction ${sig} not seen within 5 s`);
}

// A Solana Pay reference: a read-only, non-signer key on the transfer instruction.
function withReference(ix, reference) {
  if (reference) {
    ix.keys.push({ pubkey: new web3.PublicKey(reference), isSigner: false, isWritable: false });
  }
  return ix;
}

const ops = {
  wallet: (c) => wallet(c.name).publicKey.toBase58(),
  keypair: () => web3.Keypair.generate().publicKey.toBase58(),
  mint: (c) => mint(c.address, c.decimals, c.token2022),
  fundToken: (c) => {
    const program = c.token2022 ? spl.TOKEN_2022_PROGRAM_ID.toBase58() : null;
    const owner = c.owner || wallet(c.name).publicKey.toBase58();
    net.fundToken(owner, c.mint, c.amount, program);
    return null;
  },
  ata: (c) => net.getAta(c.owner, c.mint, c.token2022 ? spl.TOKEN_2022_PROGRAM_ID.toBase58() : null),
  // SOL from wallet `from` to `to`; `fail` sends more than it holds (skipping preflight).
  paySol: async (c) => {
    const from = wallet(c.from);
    const ix = web3.SystemProgram.transfer({
      fromPubkey: from.publicKey, toPubkey: new web3.PublicKey(c.to), lamports: BigInt(c.lamports),
    });
    return send([withReference(ix, c.reference)], [from], c.fail);
  },
  // A token payment: the recipient's associated account created when missing (unless
  // `existing`: then the wallet is not among the transaction's accounts), then transferChecked
  // (or plain transfer when `unchecked`).
  payToken: async (c) => {
    const from = wallet(c.from);
    const program = c.token2022 ? spl.TOKEN_2022_PROGRAM_ID : spl.TOKEN_PROGRAM_ID;
    const mintKey = new web3.PublicKey(c.mint);
    const to = new web3.PublicKey(c.to);
    const source = spl.getAssociatedTokenAddressSync(mintKey, from.publicKey, false, program);
    const dest = spl.getAssociatedTokenAddressSync(mintKey, to, true, program);
    const create = spl.createAssociatedTokenAccountIdempotentInstruction(
      from.publicKey, dest, to, mintKey, program);
    const amount = BigInt(c.amount);
    const ix = c.unchecked
      ? spl.createTransferInstruction(source, dest, from.publicKey, amount, [], program)
      : spl.createTransferCheckedInstruction(
        source, mintKey, dest, from.publicKey, amount, c.decimals, [], program);
    const ixs = c.existing ? [withReference(ix, c.reference)] : [create, withReference(ix, c.reference)];
    return send(ixs, [from], c.fail);
  },
  slot: async () => conn.getSlot("confirmed"),
};

let queue = Promise.resolve();
require("readline").createInterface({ input: process.stdin }).on("line", (line) => {
  queue = queue.then(async () => {
    let answer;
    try {
      const c = JSON.parse(line);
      const op = ops[c.op];
      if (!op) throw new Error(`unknown op ${c.op}`);
      answer = { ok: await op(c) };
    } catch (e) {
      answer = { error: String(e && e.message ? e.message : e).slice(0, 500) };
    }
    process.stdout.write(JSON.stringify(answer) + "\n");
  });
}).on("close", () => process.exit(0));
process.stdout.write(JSON.stringify({ rpcUrl: net.rpcUrl, payer: net.payer }) + "\n");
