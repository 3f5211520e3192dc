"""The stack, tier by tier: clients, the proxy (Apache httpd), the balancer, the application
servers, the cluster network and the database.  `station` is the host-level server every tier is
built from.
"""
