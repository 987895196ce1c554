// Takes control at once and answers one URL itself (the page server has no such page).
self.addEventListener("install", () => self.skipWaiting());
self.addEventListener("activate", e => e.waitUntil(self.clients.claim()));
self.addEventListener("fetch", e => {
  if (e.request.url.endsWith("/csgw-service-worker-answer")) {
    e.respondWith(new Response("answered by the service worker"));
  }
});
