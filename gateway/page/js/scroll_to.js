// Scroll the page to its top or its bottom (`to` is "top" or "bottom").
(to) => window.scrollTo(0, to === "top" ? 0 : document.scrollingElement.scrollHeight)
