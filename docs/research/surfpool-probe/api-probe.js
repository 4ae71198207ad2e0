const {Surfnet}=require(process.env.HOME+"/.cache/payrecon-tools/node_modules/surfpool-sdk-linux-x64-gnu/surfpool-sdk.linux-x64-gnu.node");
let t=process.hrtime.bigint();
const s=Surfnet.start();
console.log("start ms", Number(process.hrtime.bigint()-t)/1e6);
console.log({rpcUrl:s.rpcUrl, wsUrl:s.wsUrl, payer:s.payer, instanceId:s.instanceId, sk: s.payerSecretKey && s.payerSecretKey.constructor.name+"/"+s.payerSecretKey.length});
const kp=Surfnet.newKeypair(); console.log("newKeypair", Object.keys(kp), typeof kp.secretKey, kp.secretKey.constructor.name, kp.secretKey.length);
console.log("events", JSON.stringify(s.drainEvents().slice(0,5)));
console.log("stop?", typeof s.stop);
t=process.hrtime.bigint();
const s2=Surfnet.startWithConfig({offline:true, blockProductionMode:"clock", slotTimeMs:100, airdropSol: 5_000_000_000});
console.log("start2 ms", Number(process.hrtime.bigint()-t)/1e6, s2.rpcUrl);
try { Surfnet.startWithConfig({blockProductionMode:"bogus"}) } catch(e){ console.log("bad mode err:", e.message) }
try { s.fundSol("notakey", 1) } catch(e){ console.log("bad key err:", e.message) }
try { s.fundSol(kp.publicKey, -1) } catch(e){ console.log("neg lamports err:", e.message) }
try { s.fundSol(kp.publicKey, 1.5) } catch(e){ console.log("frac lamports err:", e.message) }
process.exit(0);
