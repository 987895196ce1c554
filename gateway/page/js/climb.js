// Included by prepare.js and frame_point.js: carry a point in an element's document up
// through same-origin frames to the top, checking at every level that nothing of the
// enclosing page lies over the <iframe> at that point. A cross-site parent stops the climb;
// the gateway continues from there through that frame's own session.
const describe = (n) => {
  let d = n.localName + (n.id ? "#" + n.id : "");
  if (typeof n.className === "string" && n.className.trim())
    d += "." + n.className.trim().split(/\s+/).join(".");
  return "<" + d + ">";
};
const climb = (doc, x, y, hitTest) => {
  let w = doc.defaultView;
  try {
    while (w.frameElement) {
      const f = w.frameElement, fr = f.getBoundingClientRect();
      x += fr.left + f.clientLeft; y += fr.top + f.clientTop;
      if (hitTest) {
        const hit = f.ownerDocument.elementFromPoint(x, y);
        if (hit && hit !== f) return {error: "is covered by " + describe(hit) +
                                             " of the page around its frame"};
      }
      w = w.parent;
    }
  } catch (e) {}  // a cross-site parent: the gateway continues from there
  return {x, y};
};
