// start one surfnet with config from argv JSON, report start time and idle slot rate. Run: node one.js '{"blockProductionMode":"clock"}'
const { Surfnet } = require(process.env.HOME + "/.cache/payrecon-tools/node_modules/surfpool-sdk-linux-x64-gnu/surfpool-sdk.linux-x64-gnu.node");
const rpc = async (u, m, p = []) => (await (await fetch(u, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: m, params: p }) })).json()).result;
(async () => {
  const c = process.argv[2] ? JSON.parse(process.argv[2]) : null;
  const t = process.hrtime.bigint();
  const s = c ? Surfnet.startWithConfig(c) : Surfnet.start();
  const ms = Number(process.hrtime.bigint() - t) / 1e6;
  const t2 = Date.now(); const a = await rpc(s.rpcUrl, "getSlot", [{ commitment: "processed" }]); const first = Date.now() - t2;
  await new Promise((r) => setTimeout(r, 2000));
  const b = await rpc(s.rpcUrl, "getSlot", [{ commitment: "processed" }]);
  const bal = (await rpc(s.rpcUrl, "getBalance", [s.payer])).value;
  console.log(JSON.stringify(c), `startMs=${ms.toFixed(1)} firstRpcMs=${first} slot0=${a} idleSlotsPer2s=${b - a} payerLamports=${bal}`);
  process.exit(0);
})();
