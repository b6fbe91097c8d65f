"""HTTP: the API, its caches, the routes and request policy (`web`), and `serve`."""
