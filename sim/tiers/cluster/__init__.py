"""Cluster state between application-server nodes: the network and session replication."""
