/**
 * The archive of MIC Outbox, one home for its writers and its reader. The sinks an
 * {@code io.mic.outbox.jdbc.archive.OutboxArchiver} writes to ({@link io.mic.outbox.archive.JsonLinesArchive},
 * {@link io.mic.outbox.archive.ClickHouseArchive}); the record type the replay reads
 * ({@link io.mic.outbox.archive.ArchivedEvent}); the record codec ({@link io.mic.outbox.archive.ArchiveRecords}
 * writes, {@link io.mic.outbox.archive.RecordParser} reads); JSON Lines files (gzip, JSON arrays:
 * {@code JsonLinesWriter}, {@link io.mic.outbox.archive.JsonArchiveReader}); and
 * ClickHouse: the HTTP client ({@link io.mic.outbox.archive.ClickHouseHttp}), its URL rules
 * ({@code ClickHouseUrl}), the SQL and time-column rule
 * ({@link io.mic.outbox.archive.ClickHouseSql}) and the table writer
 * ({@code ClickHouseWriter}). Depends on {@code outbox-core} and {@code jackson-core}
 * only.
 */
package io.mic.outbox.archive;
