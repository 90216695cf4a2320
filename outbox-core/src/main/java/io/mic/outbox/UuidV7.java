package io.mic.outbox;

import java.security.SecureRandom;
import java.util.Comparator;
import java.util.UUID;

/**
 * Time-ordered UUIDs (RFC 9562 version 7): 48 bits of Unix milliseconds, then a 12-bit counter that keeps
 * ids from one JVM strictly increasing within a millisecond and across a clock that steps back, then 62
 * random bits.
 */
final class UuidV7 {
  /** Byte order, as PostgreSQL and the RFC compare UUIDs ({@link UUID#compareTo} compares signed longs). */
  static final Comparator<UUID> ORDER = Comparator
      .comparing(UUID::getMostSignificantBits, Long::compareUnsigned)
      .thenComparing(UUID::getLeastSignificantBits, Long::compareUnsigned);

  private static final SecureRandom RANDOM = new SecureRandom();
  private static long lastMillis;
  private static int counter;

  private UuidV7() {}

  static UUID next() {
    long millis;
    int seq;
    synchronized (UuidV7.class) {
      long now = System.currentTimeMillis();
      if (now > lastMillis) {
        lastMillis = now;
        counter = RANDOM.nextInt(1 << 10); // leaves room for 3072 more ids in this millisecond
      } else if (++counter > 0xFFF) {
        lastMillis++; // borrow the next millisecond rather than repeat or reorder
        counter = 0;
      }
      millis = lastMillis;
      seq = counter;
    }
    long msb = (millis << 16) | 0x7000L | seq;
    long lsb = (RANDOM.nextLong() & 0x3FFFFFFFFFFFFFFFL) | 0x8000000000000000L;
    return new UUID(msb, lsb);
  }
}
