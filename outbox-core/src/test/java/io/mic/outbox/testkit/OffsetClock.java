package io.mic.outbox.testkit;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.concurrent.atomic.AtomicLong;

/** The system clock plus an offset that tests move forward: real time still passes, and can be skipped. */
public final class OffsetClock extends Clock {
  private final AtomicLong offsetNanos = new AtomicLong();

  public void advance(Duration d) {
    offsetNanos.addAndGet(d.toNanos());
  }

  @Override
  public Instant instant() {
    return Instant.now().plusNanos(offsetNanos.get());
  }

  @Override
  public ZoneId getZone() {
    return ZoneOffset.UTC;
  }

  @Override
  public Clock withZone(ZoneId zone) {
    throw new UnsupportedOperationException("OffsetClock is UTC only");
  }
}
