package io.mic.outbox.jdbc;

import io.mic.outbox.jdbc.internal.TableName;

/**
 * An outbox table and the tables beside it, quoted for one database: the aggregate locks, the sequence
 * counters and the cluster-wide pauses.
 */
record Tables(TableName name, String outbox, String locks, String sequences, String control) {
  static Tables of(TableName name, Dialect dialect) {
    char q = dialect.identifierQuote();
    return new Tables(name, name.quoted(q), name.sibling("locks", q), name.sibling("sequences", q),
        name.sibling("control", q));
  }
}
