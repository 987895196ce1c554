"""The CDP connection: one browser-level websocket, its frames, where a browser's DevTools live."""
