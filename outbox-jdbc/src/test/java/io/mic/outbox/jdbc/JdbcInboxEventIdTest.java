package io.mic.outbox.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Finding the idempotency key in live and replayed messages; no database. */
class JdbcInboxEventIdTest {

  @Test
  void aLivePublicationIsKeyedByItsEventId() {
    assertThat(JdbcInbox.eventIdOf(Map.of("x-event-id", "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", "tenant", "acme")))
        .isEqualTo("0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b");
  }

  @Test
  void aReplayIsKeyedByTheOriginalIdSoItMatchesTheLiveDelivery() {
    Map<String, String> replay = new LinkedHashMap<>();
    replay.put("x-event-id", "replay-copy-id");
    replay.put("x-replay", "true");
    replay.put("x-original-event-id", "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b");
    assertThat(JdbcInbox.eventIdOf(replay)).isEqualTo("0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b");
  }

  @Test
  void headerNamesMatchWhateverTheirCase() {
    assertThat(JdbcInbox.eventIdOf(Map.of("X-Event-Id", "e-1"))).isEqualTo("e-1");
    assertThat(JdbcInbox.eventIdOf(Map.of("X-Original-Event-Id", "e-0", "x-event-id", "e-1"))).isEqualTo("e-0");
  }

  @Test
  void aMessageWithoutAnIdIsRefusedNamingTheHeaders() {
    assertThatThrownBy(() -> JdbcInbox.eventIdOf(Map.of("tenant", "acme", "b", "1")))
        .isInstanceOf(InvalidInboxKeyException.class)
        .hasMessage("the message carries no event id: expected header x-event-id (live publication) or"
            + " x-original-event-id (replay); header names present: [b, tenant]");
    assertThatThrownBy(() -> JdbcInbox.eventIdOf(Map.of("x-event-id", " ")))
        .isInstanceOf(InvalidInboxKeyException.class)
        .hasMessage("x-event-id header must not be blank, was ' '");
    assertThatThrownBy(() -> JdbcInbox.eventIdOf(null))
        .isInstanceOf(InvalidInboxKeyException.class).hasMessage("headers are required to find the event id");
  }
}
