// A long task from a named script: busy for 300 ms while the page parses, then a
// banner inserted without user input shifts the paragraph and the image down.
function busyFor(ms) {
  const end = performance.now() + ms;
  let n = 0;
  while (performance.now() < end) n += Math.sqrt(n + 1);
  return n;
}
window.slowResult = busyFor(300);
window.addEventListener("load", () => setTimeout(() => {
  const banner = document.createElement("div");
  banner.id = "banner";
  banner.textContent = "Late banner";
  document.getElementById("slot").appendChild(banner);
}, 300));
