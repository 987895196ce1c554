// The tab's current URL and title, as the page itself reports them.
[location.href, document.title]
