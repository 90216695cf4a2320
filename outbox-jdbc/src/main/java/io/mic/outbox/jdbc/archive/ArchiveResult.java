package io.mic.outbox.jdbc.archive;

/**
 * What one {@link OutboxArchiver#archiveAndPurge} run did.
 *
 * @param archived events written to every sink
 * @param purged rows deleted from the outbox after their archive write was confirmed (can be lower than
 *     {@code archived} when another process deleted some rows meanwhile)
 * @param batches pages archived
 */
public record ArchiveResult(long archived, long purged, int batches) {}
