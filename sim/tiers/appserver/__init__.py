"""The application server (Tomcat, Jetty, JBoss): thread pool, connectors and the HotSpot JVM."""
