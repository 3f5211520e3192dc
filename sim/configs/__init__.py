"""A stack's own configuration files read as its servers read them: httpd's configuration
(`httpd.py`), mod_jk's `workers.properties` (`workers_properties.py`), Tomcat's `server.xml`
(`tomcat.py`), Jetty's `jetty.xml` (`jetty.py`); the upstream defaults of what they leave
unset (`defaults.py`); a model file assembled from them with every value's provenance
(`to_model.py`); and a model's product-form part written as an LQN (`lqn.py`)."""
