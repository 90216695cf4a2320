package io.mic.outbox.jdbc;

/** Cluster-wide pauses on Postgres. */
class PostgresClusterPauseTest extends ClusterPauseTest {
  @Override protected TestDatabase database() { return TestDatabase.POSTGRES; }
}
