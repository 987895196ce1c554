"""A browser context's storage state: cookies and origins' storage, saved and loaded."""
