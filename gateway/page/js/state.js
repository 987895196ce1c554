// What an element (`this`) says of itself: checked, editable, read-only.
function () {
  const el = this.nodeType === 1 ? this : this.parentElement;
  const aria = el.getAttribute("aria-checked");
  return {checked: "checked" in el && (el.type === "checkbox" || el.type === "radio")
            ? el.checked : aria === "true",
          editable: el.isContentEditable || ["INPUT", "TEXTAREA"].includes(el.tagName),
          readOnly: !!el.readOnly};
}
