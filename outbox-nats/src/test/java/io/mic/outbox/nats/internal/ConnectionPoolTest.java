package io.mic.outbox.nats.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/** Which connection a publication gets: the first idle one, else the least busy. Nothing connects here. */
class ConnectionPoolTest {
  private final List<ConnectionSource> sources = IntStream.range(0, 3).mapToObj(i -> ConnectionSource
      .connectingTo("nats://127.0.0.1:4222", "pool-test", Duration.ofSeconds(1), Duration.ofSeconds(1))).toList();
  private final ConnectionPool pool = new ConnectionPool(sources);

  @Test
  void publicationsOneAfterTheOtherAllTakeTheFirst() {
    for (int i = 0; i < 3; i++) {
      try (ConnectionPool.Lease lease = pool.lease()) {
        assertThat(lease.source()).isSameAs(sources.get(0));
      }
    }
  }

  @Test
  void publicationsAtTheSameTimeTakeAnIdleOneThenTheLeastBusy() {
    ConnectionPool.Lease a = pool.lease();
    ConnectionPool.Lease b = pool.lease();
    ConnectionPool.Lease c = pool.lease();
    assertThat(List.of(a.source(), b.source(), c.source())).containsExactlyElementsOf(sources);

    ConnectionPool.Lease d = pool.lease(); // all busy: shares the first
    assertThat(d.source()).isSameAs(sources.get(0));
    b.close();
    b.close(); // a second close changes nothing
    assertThat(pool.lease().source()).as("the idle one").isSameAs(sources.get(1));
    ConnectionPool.Lease e = pool.lease(); // counts now 2, 1, 1: the least busy, first of equals
    assertThat(e.source()).isSameAs(sources.get(1));
  }
}
