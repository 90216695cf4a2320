package io.mic.outbox.cli;

import io.mic.outbox.jdbc.DeadLetterQuery;
import java.time.Instant;
import picocli.CommandLine.Option;

/** The dead-letter filters, as {@link DeadLetterQuery} has them; all given filters must match. */
final class DlqFilter {
  @Option(names = "--topic", paramLabel = "TOPIC", description = "only this topic")
  String topic;

  @Option(names = "--aggregate-type", paramLabel = "TYPE", description = "only this aggregate type")
  String aggregateType;

  @Option(names = "--aggregate-id", paramLabel = "ID", description = "only this aggregate id")
  String aggregateId;

  @Option(names = "--created-from", paramLabel = "INSTANT", converter = Instants.class,
      description = "only events created at or after this UTC time, e.g. 2026-09-29T08:00:00Z")
  Instant createdFrom;

  @Option(names = "--created-before", paramLabel = "INSTANT", converter = Instants.class,
      description = "only events created before this UTC time")
  Instant createdBefore;

  @Option(names = "--error-contains", paramLabel = "TEXT", description = "only events whose last error contains"
      + " this text (case-insensitive)")
  String errorContains;

  boolean any() {
    return topic != null || aggregateType != null || aggregateId != null || createdFrom != null
        || createdBefore != null || errorContains != null;
  }

  DeadLetterQuery.Builder query() {
    DeadLetterQuery.Builder b = DeadLetterQuery.builder().createdFrom(createdFrom).createdBefore(createdBefore);
    if (topic != null) {
      b.topic(topic);
    }
    if (aggregateType != null) {
      b.aggregateType(aggregateType);
    }
    if (aggregateId != null) {
      b.aggregateId(aggregateId);
    }
    if (errorContains != null) {
      b.errorContains(errorContains);
    }
    return b;
  }
}
