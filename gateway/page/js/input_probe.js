// A probe (returned by reference) that notes where the next mouse move lands in the
// element's (`this`) frame: on the element — or a label around it, or the host of the
// shadow root it is in — or elsewhere. An out-of-process frame takes input only once the
// browser has drawn it, and a scroll that the element's scrollIntoView asked of a
// cross-site parent lands a moment later: the probe tells when the pointer is really on it.
function () {
  const el = this.nodeType === 1 ? this : this.parentElement;
  const hosts = new Set();
  for (let root = el.getRootNode(); root && root.host; root = root.host.getRootNode())
    hosts.add(root.host);
  const probe = {over: null};
  el.ownerDocument.defaultView.addEventListener("mousemove", (e) => {
    probe.over = e.composedPath().some(n => n === el || hosts.has(n) ||
                                            (n.tagName === "LABEL" && n.contains(el)));
  }, {capture: true, once: true});
  return probe;
}
