package io.mic.outbox.spi;

import io.mic.outbox.BatchDispatchFn;
import io.mic.outbox.DispatchFn;
import io.mic.outbox.OutboxEvent;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;

/** The publishers {@link DispatchDecorator#wrap} builds: one per kind, so a wrapper never hides what it wraps. */
final class Decorated {
  private Decorated() {}

  static DispatchFn of(DispatchFn publisher, DispatchDecorator decorator) {
    Objects.requireNonNull(publisher, "publisher");
    if (publisher instanceof ChannelDispatchFn channels) {
      return new Channels(channels, decorator);
    }
    if (publisher instanceof BatchDispatchFn batches) {
      return new Batches(batches, decorator);
    }
    return new Single(publisher, decorator);
  }

  /** The probe of {@code publisher} or of the publisher it wraps, however deep; {@code null}: none. */
  static BrokerProbe probeOf(DispatchFn publisher) {
    DispatchFn p = publisher;
    while (!(p instanceof BrokerProbe) && p instanceof Wrapper wrapper) {
      p = wrapper.wrapped();
    }
    return p instanceof BrokerProbe probe ? probe : null;
  }

  /** A publisher built here: it names what it wraps, so that {@link #probeOf} finds the wrapped one's probe. */
  private interface Wrapper {
    DispatchFn wrapped();
  }

  private record Single(DispatchFn publisher, DispatchDecorator decorator) implements DispatchFn, Wrapper {
    @Override
    public void dispatch(OutboxEvent event) throws Exception {
      decorator.dispatch(event, publisher);
    }

    @Override
    public DispatchFn wrapped() {
      return publisher;
    }
  }

  private static class Batches implements BatchDispatchFn, Wrapper {
    final DispatchDecorator decorator;
    private final BatchDispatchFn publisher;

    Batches(BatchDispatchFn publisher, DispatchDecorator decorator) {
      this.publisher = publisher;
      this.decorator = decorator;
    }

    @Override
    public DispatchFn wrapped() {
      return publisher;
    }

    @Override
    public void dispatch(OutboxEvent event) throws Exception {
      decorator.dispatch(event, publisher);
    }

    @Override
    public Map<UUID, Exception> dispatchBatch(List<OutboxEvent> events) throws Exception {
      return decorator.send(events, batch -> {
        Map<UUID, Exception> failures = publisher.dispatchBatch(batch);
        return () -> failures;
      }).outcomes();
    }
  }

  private static final class Channels extends Batches implements ChannelDispatchFn {
    private final ChannelDispatchFn publisher;

    Channels(ChannelDispatchFn publisher, DispatchDecorator decorator) {
      super(publisher, decorator);
      this.publisher = publisher;
    }

    @Override
    public BatchChannel channel() {
      BatchChannel inner = publisher.channel();
      return new BatchChannel() {
        @Override
        public Sent send(List<OutboxEvent> events) throws Exception {
          return decorator.send(events, inner);
        }

        @Override
        public boolean overlapping() {
          return inner.overlapping();
        }

        @Override
        public void close() {
          inner.close();
        }
      };
    }
  }
}
