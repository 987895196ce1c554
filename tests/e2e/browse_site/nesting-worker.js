// A dedicated worker that starts a dedicated worker of its own and passes its answer on.
onmessage = e => {
  const inner = new Worker("worker.js");
  inner.onmessage = answer => postMessage("nested " + answer.data);
  inner.postMessage(e.data);
};
