package io.mic.replay.internal;

import io.mic.outbox.archive.ArchiveRecord;
import io.mic.replay.ArchivedEvent;

/** The archive format's records as the replay publishes them. */
public final class Records {
  private Records() {}

  public static ArchivedEvent event(ArchiveRecord r) {
    return new ArchivedEvent(r.id(), r.topic(), r.aggregateType(), r.aggregateId(), r.createdAt(), r.payload(),
        r.headers(), new ArchivedEvent.Envelope(r.sequence(), r.schemaVersion(), r.occurredAt(), r.traceParent()));
  }
}
