"""Finding a browser on a host: the strategies, tried in order, and the scripts they run there."""
