package io.mic.outbox.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** The pace of progress lines, on a settable clock. */
class ProgressTest {
  @Test
  void atMostOneLinePerIntervalWithTheRateSinceTheStart() {
    AtomicLong now = new AtomicLong(1_000);
    StringWriter err = new StringWriter();
    Progress p = new Progress(new PrintWriter(err, true), "purge", Duration.ofSeconds(10), now::get);
    p.update(1_000, " deleted");                        // at the start: too early
    now.addAndGet(Duration.ofSeconds(5).toNanos());
    p.update(5_000, " deleted");                        // 5 s: too early
    now.addAndGet(Duration.ofSeconds(5).toNanos());
    p.update(10_000, " deleted");                       // 10 s: a line, 1000/s
    now.addAndGet(Duration.ofSeconds(9).toNanos());
    p.update(19_000, " deleted");                       // 9 s after the last line: too early
    now.addAndGet(Duration.ofSeconds(1).toNanos());
    p.update(30_000, " deleted");                       // 20 s: a line, 1500/s
    assertThat(err.toString()).isEqualTo("purge: 10000 event(s) deleted so far, 1000/s\n"
        + "purge: 30000 event(s) deleted so far, 1500/s\n");
  }
}
