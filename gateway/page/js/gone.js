// Whether an element (`this`) has left the page or stopped being visible.
function () {
  const el = this.nodeType === 1 ? this : this.parentElement;
  if (!el || !el.isConnected) return true;
  const r = el.getBoundingClientRect();
  return r.width < 1 || r.height < 1 || getComputedStyle(el).visibility === "hidden";
}
