/**
 * Archiving of dispatched outbox events before they are purged: {@link io.mic.outbox.jdbc.archive.OutboxArchiver}
 * copies them to {@link io.mic.outbox.ArchiveSink}s (in {@code outbox-archive}: {@code JsonLinesArchive} files
 * and/or a {@code ClickHouseArchive} table, in the formats {@code mic-events-replay} reads), and deletes them
 * only once every sink confirmed the write.
 */
package io.mic.outbox.jdbc.archive;
