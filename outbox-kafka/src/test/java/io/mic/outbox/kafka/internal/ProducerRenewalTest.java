package io.mic.outbox.kafka.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.apache.kafka.clients.producer.MockProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.errors.OutOfOrderSequenceException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.errors.SaslAuthenticationException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.Test;

/**
 * Which failures make the publisher replace its producer, and how: a fatal one closes the publisher's own producer
 * and the next batch gets a new one; a passing one (a timeout) keeps it; the application's producer is kept.
 */
class ProducerRenewalTest {
  private final List<MockProducer<byte[], byte[]>> created = new ArrayList<>();

  private MockProducer<byte[], byte[]> newProducer() {
    MockProducer<byte[], byte[]> p = new MockProducer<>(true, null, new ByteArraySerializer(),
        new ByteArraySerializer());
    created.add(p);
    return p;
  }

  @Test
  void theFatalStatesOfAnIdempotentProducerAndRefusedCredentialsAreFatalATimeoutIsNot() {
    assertThat(ProducerRenewal.fatalCause(new KafkaException("send failed", new OutOfOrderSequenceException("x"))))
        .isInstanceOf(OutOfOrderSequenceException.class);
    assertThat(ProducerRenewal.fatalCause(new ProducerFencedException("x"))).isNotNull();
    assertThat(ProducerRenewal.fatalCause(new SaslAuthenticationException("x"))).isNotNull();
    assertThat(ProducerRenewal.fatalCause(new TimeoutException("Expiring 3 records"))).isNull();
    assertThat(ProducerRenewal.fatalCause(null)).isNull();
  }

  @Test
  void anOwnProducerThatHitAFatalErrorIsClosedAndReplacedOnce() {
    ProducerRenewal renewal = new ProducerRenewal(newProducer(), this::newProducer, Duration.ZERO);
    Producer<byte[], byte[]> first = renewal.current();

    renewal.report(first, Arrays.asList(null, new TimeoutException("Expiring 1 record")));
    assertThat(renewal.current()).as("after a timeout").isSameAs(first);

    renewal.report(first, List.of(new KafkaException(new OutOfOrderSequenceException("broker lost the sequence"))));
    Producer<byte[], byte[]> second = renewal.current();
    assertThat(second).as("after a fatal error").isNotSameAs(first);
    assertThat(created.get(0).closed()).as("the failed producer is closed").isTrue();
    assertThat(renewal.current()).as("the next batch keeps the new one").isSameAs(second);

    renewal.report(first, List.of(new ProducerFencedException("late failure of the old producer")));
    assertThat(renewal.current()).as("a failure reported by a batch of the replaced producer").isSameAs(second);
  }

  @Test
  void theApplicationsProducerIsNeverReplaced() {
    MockProducer<byte[], byte[]> app = newProducer();
    ProducerRenewal renewal = new ProducerRenewal(app, null, Duration.ZERO);
    renewal.report(app, List.of(new ProducerFencedException("fenced")));
    assertThat(renewal.current()).isSameAs(app);
    assertThat(app.closed()).isFalse();
    renewal.close(Duration.ZERO);
    assertThat(app.closed()).as("closing the publisher leaves the application's producer open").isFalse();
  }
}
