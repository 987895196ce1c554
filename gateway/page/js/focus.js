// Focus an element (`this`), selecting its content first when `clear`; true if it took focus.
function (clear) {
  this.focus();
  if (clear) {
    if (typeof this.select === "function") this.select();
    else if (this.isContentEditable) this.ownerDocument.execCommand("selectAll");
  }
  return this.getRootNode().activeElement === this ||
         (this.shadowRoot !== null && this.shadowRoot.activeElement !== null);
}
