// fresh-process startup timing: node bench-start.js
const t0 = process.hrtime.bigint(); const ms = (a, b) => (Number(b - a) / 1e6).toFixed(1);
const { Surfnet } = require(process.env.HOME + "/.cache/payrecon-tools/node_modules/surfpool-sdk-linux-x64-gnu/surfpool-sdk.linux-x64-gnu.node");
const t1 = process.hrtime.bigint();
const s = Surfnet.start();
const t2 = process.hrtime.bigint();
(async () => {
  for (;;) { try { const r = await (await fetch(s.rpcUrl, { method: "POST", headers: { "content-type": "application/json" }, body: '{"jsonrpc":"2.0","id":1,"method":"getSlot"}' })).json(); if ("result" in r) break; } catch {} }
  const t3 = process.hrtime.bigint();
  console.log(`require=${ms(t0, t1)}ms start=${ms(t1, t2)}ms firstRpcAfterStart=${ms(t2, t3)}ms rssMB=${(process.memoryUsage().rss / 1048576).toFixed(0)} threads=${require("fs").readdirSync("/proc/self/task").length}`);
  process.exit(0);
})();
