package io.mic.outbox;

import java.util.List;

/**
 * Where an archiver ({@code io.mic.outbox.jdbc.archive.OutboxArchiver}) copies dispatched events; the sinks
 * of {@code outbox-archive} are {@code JsonLinesArchive} and {@code ClickHouseArchive}. It lives in the core
 * so a store's archiver and the sinks need nothing from each other. {@link #archive} returns only once the events are
 * durably stored (a file fsynced and renamed into place, a ClickHouse insert acknowledged): the archiver
 * deletes them from the outbox right after. Anything less must throw.
 */
public interface ArchiveSink {

  /**
   * Stores {@code events} durably, or throws.
   *
   * @throws ArchiveException nothing may be assumed stored; the archiver purges nothing
   */
  void archive(List<OutboxEvent> events);
}
