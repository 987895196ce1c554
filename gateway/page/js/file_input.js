// Whether the element (`this`) is a file input, and what it takes: {file, multiple, disabled}.
function () {
  const el = this.nodeType === 1 ? this : this.parentElement;
  const file = !!el && el.tagName === "INPUT" && el.type === "file";
  return {file, multiple: file && el.multiple,
          disabled: file && (el.disabled || !!el.closest("fieldset:disabled"))};
}
