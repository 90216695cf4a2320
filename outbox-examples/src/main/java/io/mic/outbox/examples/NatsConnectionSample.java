package io.mic.outbox.examples;

import io.mic.outbox.nats.NatsJetStreamPublisher;
import io.nats.client.Connection;
import io.nats.client.Nats;
import io.nats.client.Options;
import java.io.IOException;

/** The docs' NATS publisher samples: on the application's connection, and on its own (compiled, see DocSamplesTest). */
final class NatsConnectionSample {
  private NatsConnectionSample() {}

  static NatsJetStreamPublisher publisherOnTheApplicationsConnection() throws IOException, InterruptedException {
    // docs/nats.md 2 begin
    Connection nats = Nats.connect(Options.builder().server("nats://127.0.0.1:4222")
        .dontForceFlushOnRequest().build());
    NatsJetStreamPublisher publisher = NatsJetStreamPublisher.builder().connection(nats).build();
    // docs/nats.md 2 end
    return publisher;
  }

  static NatsJetStreamPublisher publisherWithAConnectionPerWorker() {
    // docs/nats.md 3 begin
    NatsJetStreamPublisher publisher = NatsJetStreamPublisher.builder()
        .url("nats://127.0.0.1:4222")
        .connections(2)        // the default; as many as the dispatcher's workers
        .build();
    // docs/nats.md 3 end
    return publisher;
  }
}
