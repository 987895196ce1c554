// In the element's own frame (`this`): scroll it to the middle (unless `scroll` is false:
// a drag's target must stay where the drag's source left it), let a frame be drawn (input
// is routed by what is on screen), check it can take input, hit-test its centre (open shadow
// roots entered; a closed root's host counts as the element), then carry the point up.
// Returns {x, y, width, height} in top-level coordinates, or {error}.
async function (hitTest, scroll = true) {
  // include: climb.js
  const el = this.nodeType === 1 ? this : this.parentElement;
  if (!el || !el.isConnected) return {error: "is no longer in the page"};
  if (scroll) el.scrollIntoView({block: "center", inline: "center", behavior: "instant"});
  await new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)));
  const r = el.getBoundingClientRect();
  const s = getComputedStyle(el);
  if (r.width < 1 || r.height < 1 || s.visibility === "hidden" || s.display === "none")
    return {error: "is not visible"};
  if (el.disabled || el.closest("fieldset:disabled") ||
      el.getAttribute("aria-disabled") === "true") return {error: "is disabled"};
  const x = r.left + r.width / 2, y = r.top + r.height / 2;
  if (hitTest) {
    let hit = el.ownerDocument.elementFromPoint(x, y);
    while (hit && hit.shadowRoot) {
      const inner = hit.shadowRoot.elementFromPoint(x, y);
      if (!inner || inner === hit) break;
      hit = inner;
    }
    const hosts = new Set();
    for (let root = el.getRootNode(); root && root.host; root = root.host.getRootNode())
      hosts.add(root.host);
    const within = (n) => { for (; n; n = n.parentNode || n.host) if (n === el) return true;
                            return false; };
    if (hit && !within(hit) && !hosts.has(hit) &&
        !(hit.tagName === "LABEL" && hit.contains(el)))
      return {error: "is covered by " + describe(hit) + " at its centre"};
  }
  const top = climb(el.ownerDocument, x, y, hitTest);
  return top.error ? top : {x: top.x, y: top.y, width: r.width, height: r.height};
}
