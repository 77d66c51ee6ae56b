"""The GitHub client, its App auth, and the one forge error mapper."""
