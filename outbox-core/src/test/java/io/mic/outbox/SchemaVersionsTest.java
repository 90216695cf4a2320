package io.mic.outbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.mic.outbox.spi.Deliveries;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The consumer's schema declaration and the guard in {@link Deliveries}. */
class SchemaVersionsTest {
  private final List<String> handled = new ArrayList<>();

  @Test
  void aTopicDeclaredApartReadsItsOwnVersionsAndEveryOtherTopicTheDefault() {
    SchemaVersions accepts = SchemaVersions.upTo(1).topic("order.created", 3);

    assertThat(accepts.accepts("order.created", 3)).isTrue();
    assertThat(accepts.accepts("order.created", 4)).isFalse();
    assertThat(accepts.accepts("order.paid", 1)).isTrue();
    assertThat(accepts.accepts("order.paid", 2)).isFalse();
    assertThat(accepts.topic("order.created", 2).highest("order.created")).as("a redeclaration replaces").isEqualTo(2);
    assertThat(accepts.highest("order.created")).as("immutable").isEqualTo(3);
    assertThat(SchemaVersions.ANY.accepts("anything", Integer.MAX_VALUE)).isTrue();
  }

  @Test
  void aMissingHeaderIsTheEnvelopesDefaultVersionAndAMalformedOneIsNamed() {
    assertThat(SchemaVersions.versionOf(null)).isEqualTo(OutboxEvent.DEFAULT_SCHEMA_VERSION).isEqualTo(1);
    assertThat(SchemaVersions.versionOf("7")).isEqualTo(7);
    assertThatThrownBy(() -> SchemaVersions.versionOf("2.0")).isInstanceOf(OutboxException.class)
        .hasMessage("header x-schema-version must be a whole number >= 1, was '2.0'");
    assertThatThrownBy(() -> SchemaVersions.versionOf("0")).hasMessageContaining("was '0'");
  }

  @Test
  void aDeclarationBelowOneOrWithoutATopicIsRefusedWithTheFix() {
    assertThatThrownBy(() -> SchemaVersions.upTo(0)).isInstanceOf(IllegalArgumentException.class)
        .hasMessage("upTo must be >= 1 (schema versions start at 1), was 0");
    assertThatThrownBy(() -> SchemaVersions.upTo(1).topic("order.created", -1))
        .hasMessage("version of topic 'order.created' must be >= 1 (schema versions start at 1), was -1");
    assertThatThrownBy(() -> SchemaVersions.upTo(1).topic(" ", 2)).hasMessageContaining("topic must not be blank");
  }

  @Test
  void theGuardHandsTheHandlerOnlyWhatTheConsumerReads() {
    SchemaVersions accepts = SchemaVersions.upTo(1).topic("order.created", 2);
    DeliveryHandler handler = handled::add;

    assertThat(Deliveries.attempt(handler, "e1", "test", accepts, "order.created", "2"))
        .isEqualTo(DeliveryOutcome.APPLIED);
    assertThat(Deliveries.attempt(handler, "e2", "test", accepts, "order.created", "3"))
        .as("too new: delivered again, never applied").isEqualTo(DeliveryOutcome.REDELIVERED);
    assertThat(Deliveries.attempt(handler, "e3", "test", accepts, "order.paid", null))
        .as("no header: version 1").isEqualTo(DeliveryOutcome.APPLIED);
    assertThat(Deliveries.attempt(handler, "e4", "test", accepts, "order.paid", "2"))
        .isEqualTo(DeliveryOutcome.REDELIVERED);
    assertThat(Deliveries.attempt(handler, "e5", "test", accepts, "order.paid", "two"))
        .as("no redelivery makes it readable").isEqualTo(DeliveryOutcome.REJECTED);
    assertThat(handled).containsExactly("e1", "e3");
  }
}
