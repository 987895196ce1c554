// Whether pressing and moving on the element (`this`) starts an HTML5 drag in Chromium.
function () {
  const el = this.nodeType === 1 ? this : this.parentElement;
  return !!el && !!el.closest('[draggable="true"], a[href]:not([draggable="false"]), ' +
                              'img:not([draggable="false"])');
}
