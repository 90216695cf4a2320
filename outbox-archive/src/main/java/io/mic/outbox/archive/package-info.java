/**
 * The archive format of MIC Outbox, one home for its writer ({@code outbox-jdbc}'s
 * {@code io.mic.outbox.jdbc.archive.OutboxArchiver}) and its reader ({@code outbox-replay}): the record
 * codec ({@link io.mic.outbox.archive.ArchiveRecords} writes, {@link io.mic.outbox.archive.RecordParser}
 * reads {@link io.mic.outbox.archive.ArchiveRecord}s), JSON Lines files (gzip, JSON arrays:
 * {@link io.mic.outbox.archive.JsonLinesWriter}, {@link io.mic.outbox.archive.JsonArchiveReader}), and
 * ClickHouse: the HTTP client ({@link io.mic.outbox.archive.ClickHouseHttp}), its URL rules
 * ({@link io.mic.outbox.archive.ClickHouseUrl}), the SQL and time-column rule
 * ({@link io.mic.outbox.archive.ClickHouseSql}) and the table writer
 * ({@link io.mic.outbox.archive.ClickHouseWriter}). Depends on {@code outbox-core} and {@code jackson-core}
 * only; applications use the archiver and the replay rather than this package.
 */
package io.mic.outbox.archive;
