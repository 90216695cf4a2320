package io.mic.outbox;

import java.util.UUID;

/** An event with the same id is already in the store; the second append changed nothing. */
public class DuplicateEventException extends OutboxException {
  private static final long serialVersionUID = 1L;
  private final UUID eventId;

  public DuplicateEventException(UUID eventId) {
    super("event " + eventId + " is already in the outbox: ids must be unique, leave .id(...) unset to get a fresh one");
    this.eventId = eventId;
  }

  public UUID eventId() {
    return eventId;
  }
}
