// Preloaded (node --require) by rein's tests so that servers which listen on
// every interface bind to 127.0.0.1 only.
const net = require("node:net");
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  if (typeof args[0] === "number" || (typeof args[0] === "string" && /^\d+$/.test(args[0]))) {
    const cb = args.find((a) => typeof a === "function");
    return cb ? listen.call(this, Number(args[0]), "127.0.0.1", cb) : listen.call(this, Number(args[0]), "127.0.0.1");
  }
  return listen.apply(this, args);
};
