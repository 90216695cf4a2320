package io.mic.outbox.faults;

import io.mic.outbox.DispatchFn;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.PublishUnavailableException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * A broker that keeps every publication as a line {@code eventId aggregateId sequence pid millis} (the wall
 * clock of the publication) in a file
 * shared by all worker processes. Each line is one {@code write(2)} on a file opened for append, so it
 * survives a SIGKILL the instant the call returns, and lines of several processes never interleave.
 *
 * <p>While the {@code outage} file exists the sink refuses everything as unavailable, like a broker that
 * is down. An event whose payload says {@code "poison":true} is refused as the event's own fault, until a
 * file {@code poison-cured} exists beside the {@code outage} file (the consumer was fixed).
 */
final class RecordingSink implements DispatchFn, AutoCloseable {
  private final FileChannel log;
  private final Path outage;
  private final long delayMillis;
  private final long pid = ProcessHandle.current().pid();

  RecordingSink(Path log, Path outage, long delayMillis) throws IOException {
    this.log = FileChannel.open(log, StandardOpenOption.CREATE, StandardOpenOption.WRITE, StandardOpenOption.APPEND);
    this.outage = outage;
    this.delayMillis = delayMillis;
  }

  @Override
  public void dispatch(OutboxEvent event) throws Exception {
    if (outage != null && Files.exists(outage)) {
      throw new PublishUnavailableException("the recording broker is down (outage file present)");
    }
    if (Workload.isPoison(event.payload()) && (outage == null || !Files.exists(outage.resolveSibling("poison-cured")))) {
      throw new IllegalStateException("poison event refused by the recording broker");
    }
    if (delayMillis > 0) {
      Thread.sleep(delayMillis);
    }
    String line = event.id() + " " + event.aggregateId() + " " + Workload.sequenceOf(event.payload()) + " " + pid + " "
        + System.currentTimeMillis() + "\n";
    ByteBuffer bytes = ByteBuffer.wrap(line.getBytes(StandardCharsets.US_ASCII));
    synchronized (log) {
      while (bytes.hasRemaining()) {
        log.write(bytes);
      }
    }
    FaultPoint.AFTER_PUBLISH_BEFORE_ACK.reach();
  }

  @Override
  public void close() throws IOException {
    log.close();
  }
}
