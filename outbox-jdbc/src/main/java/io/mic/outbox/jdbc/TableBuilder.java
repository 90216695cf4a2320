package io.mic.outbox.jdbc;

import io.mic.outbox.InvalidConfigurationException;
import io.mic.outbox.jdbc.internal.TableName;
import javax.sql.DataSource;

/**
 * What the builders of the tables written inside the caller's transactions share ({@link JdbcOutboxStore},
 * {@link JdbcInbox}): the DataSource, required; the table, validated as it is given; the dialect, detected
 * from the database unless given.
 *
 * @param <B> the builder, returned by every option
 */
abstract class TableBuilder<B extends TableBuilder<B>> {
  DataSource dataSource;
  TableName tableName;
  Dialect dialect;

  TableBuilder(String defaultTable) {
    this.tableName = new TableName(null, defaultTable);
  }

  /**
   * Required: a pooled DataSource such as HikariCP's, on the database where the caller's transactions
   * run (the business effects, and the appends or records that must commit with them).
   */
  public B dataSource(DataSource dataSource) {
    this.dataSource = dataSource;
    return self();
  }

  /**
   * The table (default: the class's {@code DEFAULT_TABLE}); {@code [A-Za-z_][A-Za-z0-9_]*}, optionally
   * {@code schema.table}.
   */
  public B table(String table) {
    this.tableName = TableName.parse("table", table);
    return self();
  }

  /** Overrides the dialect detected from the connection's metadata. */
  public B dialect(Dialect dialect) {
    this.dialect = dialect;
    return self();
  }

  /** @throws InvalidConfigurationException if no DataSource was given */
  void requireDataSource() {
    if (dataSource == null) {
      throw new InvalidConfigurationException("dataSource is required: .dataSource(hikariDataSource)");
    }
  }

  @SuppressWarnings("unchecked")
  private B self() {
    return (B) this;
  }
}
