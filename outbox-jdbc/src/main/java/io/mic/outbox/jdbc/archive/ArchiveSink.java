package io.mic.outbox.jdbc.archive;

import io.mic.outbox.OutboxEvent;
import java.util.List;

/**
 * Where {@link OutboxArchiver} copies dispatched events. {@link #archive} returns only once the events are
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
