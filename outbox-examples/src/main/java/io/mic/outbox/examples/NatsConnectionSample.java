package io.mic.outbox.examples;

import io.mic.outbox.nats.NatsJetStreamPublisher;
import io.nats.client.Connection;
import io.nats.client.Nats;
import io.nats.client.Options;
import java.io.IOException;

/** The docs' sample of a publisher on the application's own NATS connection (compiled, see DocSamplesTest). */
final class NatsConnectionSample {
  private NatsConnectionSample() {}

  static NatsJetStreamPublisher publisherOnTheApplicationsConnection() throws IOException, InterruptedException {
    // docs/nats.md 1 begin
    Connection nats = Nats.connect(Options.builder().server("nats://127.0.0.1:4222")
        .dontForceFlushOnRequest().build());
    NatsJetStreamPublisher publisher = NatsJetStreamPublisher.builder().connection(nats).build();
    // docs/nats.md 1 end
    return publisher;
  }
}
