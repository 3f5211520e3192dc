"""The front (Apache httpd): its worker pool by MPM, child process management, client connections
(keep-alive, lingering close) and its pool of backend connections (mod_proxy, mod_jk).
"""
