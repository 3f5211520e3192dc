"""Client populations: closed users, open arrivals, partly-open sessions and ApacheBench."""
