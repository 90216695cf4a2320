package io.mic.outbox.jdbc;

import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.List;
import java.util.UUID;

/** Binding event ids, one parameter each or as one PostgreSQL array. */
final class Ids {
  private Ids() {}

  /** Binds {@code ids} from {@code from}; returns the next index. */
  static int bind(PreparedStatement ps, int from, List<UUID> ids, Dialect dialect) throws SQLException {
    int i = from;
    for (UUID id : ids) {
      dialect.setId(ps, i++, id);
    }
    return i;
  }

  /** The ids as one {@code uuid[]} parameter (PostgreSQL). */
  static java.sql.Array array(PreparedStatement ps, List<UUID> ids) throws SQLException {
    return ps.getConnection().createArrayOf("uuid", ids.toArray());
  }
}
