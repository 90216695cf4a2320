package io.mic.outbox.jdbc;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.UUID;

/** Event ids in one PostgreSQL {@code bytea}. */
final class Ids {
  private Ids() {}

  /**
   * The ids' 16 bytes each, one after the other: what {@link PostgresDialect#ID_BYTES} and
   * {@link PostgresDialect#ID_ARRAY} take apart. pgjdbc sends a {@code bytea} in binary, where it sends a
   * {@code uuid[]} as text, which the server then parses; for a read beside 1,000 ids in flight that parse
   * was most of the read's cost.
   */
  static byte[] bytes(List<UUID> ids) {
    ByteBuffer bytes = ByteBuffer.allocate(16 * ids.size());
    for (UUID id : ids) {
      bytes.putLong(id.getMostSignificantBits()).putLong(id.getLeastSignificantBits());
    }
    return bytes.array();
  }
}
