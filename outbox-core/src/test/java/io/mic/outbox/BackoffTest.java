package io.mic.outbox;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class BackoffTest {
  @Test
  void doublesWithTwentyPercentJitterAndNeverExceedsTheCap() {
    Backoff b = new Backoff(Duration.ofSeconds(1), Duration.ofMinutes(5));
    double[] low = new double[12];
    double[] high = new double[12];
    for (int attempt = 1; attempt <= 11; attempt++) {
      low[attempt] = Double.MAX_VALUE;
      for (int i = 0; i < 2_000; i++) {
        double s = b.delay(attempt).toNanos() / 1e9;
        low[attempt] = Math.min(low[attempt], s);
        high[attempt] = Math.max(high[attempt], s);
      }
    }
    assertThat(low[1]).isBetween(0.8, 0.85);
    assertThat(high[1]).isBetween(1.15, 1.2);
    assertThat(low[4]).isBetween(6.4, 6.8);
    assertThat(high[4]).isBetween(9.2, 9.6);
    assertThat(high[11]).isEqualTo(300.0); // 1024 s capped at 5 min
    assertThat(low[11]).isBetween(240.0, 245.0);
  }
}
