// Choose an option of a <select> (`this`) by value or label, firing input and change.
function (value, label) {
  if (this.tagName !== "SELECT") return {error: "is not a <select>; click its options instead"};
  const options = Array.from(this.options);
  const match = options.find(o => value !== null
    ? o.value === value : o.label.trim() === label || o.text.trim() === label);
  if (!match) return {error: "has no option " + JSON.stringify(value ?? label) +
                            "; options: " + options.map(o => o.label.trim()).join(", ")};
  if (match.disabled) return {error: "option " + JSON.stringify(match.label) + " is disabled"};
  match.selected = true;
  this.dispatchEvent(new Event("input", {bubbles: true}));
  this.dispatchEvent(new Event("change", {bubbles: true}));
  return {selected: match.label.trim()};
}
