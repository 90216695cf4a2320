package io.mic.outbox.kafka;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.mic.outbox.OutboxException;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.junit.jupiter.api.Test;

/** The idempotency key of a consumed record: the original id of a replay wins over the live id. */
class KafkaHeadersTest {
  @Test
  void theKeyIsTheOriginalIdOfAReplayElseTheEventId() {
    RecordHeaders live = new RecordHeaders();
    live.add("x-event-id", "e-1".getBytes(UTF_8));
    assertThat(KafkaHeaders.idempotencyKey(live)).isEqualTo("e-1");
    live.add("x-original-event-id", "e-0".getBytes(UTF_8));
    assertThat(KafkaHeaders.idempotencyKey(live)).isEqualTo("e-0");
  }

  @Test
  void aRecordWithoutAnEventIdNamesTheHeadersItHas() {
    RecordHeaders foreign = new RecordHeaders();
    foreign.add("tenant", "a".getBytes(UTF_8));
    assertThatThrownBy(() -> KafkaHeaders.idempotencyKey(foreign)).isInstanceOf(OutboxException.class)
        .hasMessage("the record carries no event id: expected header x-event-id (live) or x-original-event-id"
            + " (replay); headers present: [tenant]");
  }
}
