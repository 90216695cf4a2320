/**
 * Archiving of dispatched outbox events before they are purged: {@link io.mic.outbox.jdbc.archive.OutboxArchiver}
 * copies them to {@link io.mic.outbox.jdbc.archive.JsonLinesArchive} files and/or a
 * {@link io.mic.outbox.jdbc.archive.ClickHouseArchive} table, in the formats {@code mic-events-replay} reads,
 * and deletes them only once every archive confirmed the write.
 */
package io.mic.outbox.jdbc.archive;
