package io.mic.outbox.nats;

import io.nats.client.Connection;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A file stream of the test's own on the test server, capturing {@code name.>}: created before each test and
 * deleted after it, with the connection that manages it.
 *
 * <pre>{@code
 * @RegisterExtension final TestStream stream = new TestStream();
 * }</pre>
 */
final class TestStream implements BeforeEachCallback, AfterEachCallback {
  private Connection admin;
  private String name;

  @Override
  public void beforeEach(ExtensionContext context) throws Exception {
    admin = NatsTestServer.connect();
    name = NatsTestServer.uniqueName();
    NatsTestServer.createStream(admin, name, c -> c);
  }

  @Override
  public void afterEach(ExtensionContext context) throws Exception {
    try {
      NatsTestServer.deleteStream(admin, name);
    } finally {
      admin.close();
    }
  }

  String name() {
    return name;
  }

  Connection admin() {
    return admin;
  }

  /** How many messages the stream holds. */
  long messages() throws Exception {
    return admin.jetStreamManagement().getStreamInfo(name).getStreamState().getMsgCount();
  }
}
