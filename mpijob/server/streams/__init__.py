"""Streaming subresources' wire protocols (port-forward, exec), each kept apart from the routes that serve it."""
