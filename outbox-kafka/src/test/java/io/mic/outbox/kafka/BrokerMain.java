package io.mic.outbox.kafka;

import java.io.IOException;

/**
 * Runs {@code kafka.Kafka} in the child JVM of {@link KafkaTestBroker}, and exits when the test JVM's end
 * of standard input closes: a test JVM that dies never leaves a broker behind.
 */
public final class BrokerMain {
  private BrokerMain() {}

  public static void main(String[] args) throws Exception {
    Thread watchdog = new Thread(() -> {
      try {
        while (System.in.read() >= 0) {
          // nothing is ever written: read() returns -1 when the parent is gone
        }
      } catch (IOException e) {
        // the pipe broke: the parent is gone as well
      }
      Runtime.getRuntime().halt(3);
    }, "parent-watchdog");
    watchdog.setDaemon(true);
    watchdog.start();
    Class.forName("kafka.Kafka").getMethod("main", String[].class).invoke(null, (Object) args);
  }
}
