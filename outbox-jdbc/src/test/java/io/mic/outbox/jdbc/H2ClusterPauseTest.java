package io.mic.outbox.jdbc;

/** Cluster-wide pauses on H2. */
class H2ClusterPauseTest extends ClusterPauseTest {
  @Override protected TestDatabase database() { return TestDatabase.H2; }
}
