package io.mic.outbox;

import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Exponential backoff: {@code initial × 2^(attempt-1)}, ±20 % jitter, never above {@code max}. The dispatchers'
 * retries follow it ({@code retryBackoff(initial, max)}), and so do the library's reconnect loops.
 *
 * <pre>{@code
 * Duration wait = new Backoff(Duration.ofSeconds(1), Duration.ofMinutes(5)).delay(3);  // about 4 s
 * }</pre>
 */
public record Backoff(Duration initial, Duration max) {

  public static final double JITTER = 0.20;

  /** The delay after failed attempt number {@code attempt} (1 for the first). */
  public Duration delay(int attempt) {
    double base = Math.min(initial.toNanos() * Math.pow(2, Math.max(0, attempt - 1)), max.toNanos());
    double jittered = base * (1 - JITTER + 2 * JITTER * ThreadLocalRandom.current().nextDouble());
    return Duration.ofNanos((long) Math.min(jittered, max.toNanos()));
  }
}
