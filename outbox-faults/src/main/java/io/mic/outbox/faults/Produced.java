package io.mic.outbox.faults;

import java.util.UUID;

/** An event a producer committed: its id, aggregate, sequence in the aggregate, and whether it is poison. */
public record Produced(UUID id, String aggregateId, long seq, boolean poison) {}
