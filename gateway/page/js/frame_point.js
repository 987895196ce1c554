// On an <iframe> owner (`this`) in its parent's session: a point of the child frame, in the
// parent's coordinates — hit-tested there — and then carried on up to the top. Measured a
// frame later: the child's scrollIntoView asks this (other-process) parent to scroll too,
// and that scroll lands asynchronously.
async function (x, y, hitTest) {
  // include: climb.js
  await new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)));
  const r = this.getBoundingClientRect();
  x += r.left + this.clientLeft; y += r.top + this.clientTop;
  if (hitTest) {
    const hit = this.ownerDocument.elementFromPoint(x, y);
    if (hit && hit !== this) return {error: "is covered by " + describe(hit) +
                                            " of the page around its frame"};
  }
  return climb(this.ownerDocument, x, y, hitTest);
}
