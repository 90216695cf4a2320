/**
 * The outbox in a SQL table: {@link io.mic.outbox.jdbc.JdbcOutboxStore} (PostgreSQL 12+, MariaDB 10.6+, H2 2.x,
 * each behind one {@link io.mic.outbox.jdbc.Dialect}; MySQL 8.0 untested), the consumer-side
 * {@link io.mic.outbox.jdbc.JdbcInbox}, and the operations an operator needs:
 * {@link io.mic.outbox.jdbc.OutboxMaintenance} (retention) and {@link io.mic.outbox.jdbc.OutboxDeadLetters}
 * (DLQ). The archiver lives in {@code io.mic.outbox.jdbc.archive}.
 */
package io.mic.outbox.jdbc;
