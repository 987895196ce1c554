"""One browser kept connected: its pages as tabs, contexts, downloads, uploads,
and the session a call works on."""
