package io.mic.outbox.jdbc;

/** Cluster-wide pauses on MariaDB. */
class MariaDbClusterPauseTest extends ClusterPauseTest {
  @Override protected TestDatabase database() { return TestDatabase.MARIADB; }
}
