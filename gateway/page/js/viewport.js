// The visual viewport's offset in the page, the window's inner size and the pixel ratio.
[visualViewport.pageLeft, visualViewport.pageTop, innerWidth, innerHeight, devicePixelRatio]
