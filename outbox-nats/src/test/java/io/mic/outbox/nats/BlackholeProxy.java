package io.mic.outbox.nats;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A TCP proxy in front of the NATS server that can silently stop forwarding on the connections it carries
 * (the sockets stay open, the bytes vanish), as a half-dead network path or a frozen client does. New
 * connections are forwarded normally.
 */
final class BlackholeProxy implements AutoCloseable {
  private final ServerSocket listener;
  private final String targetHost;
  private final int targetPort;
  private final List<Pipe> pipes = new CopyOnWriteArrayList<>();
  private final AtomicInteger accepted = new AtomicInteger();

  private BlackholeProxy(String natsUrl) throws IOException {
    URI uri = URI.create(natsUrl);
    this.targetHost = uri.getHost();
    this.targetPort = uri.getPort() < 0 ? 4222 : uri.getPort();
    this.listener = new ServerSocket();
    listener.bind(new InetSocketAddress("127.0.0.1", 0));
    Thread acceptor = new Thread(this::acceptLoop, "test-proxy-accept");
    acceptor.setDaemon(true);
    acceptor.start();
  }

  static BlackholeProxy to(String natsUrl) throws IOException {
    return new BlackholeProxy(natsUrl);
  }

  String url() {
    return "nats://127.0.0.1:" + listener.getLocalPort();
  }

  int acceptedConnections() {
    return accepted.get();
  }

  /** From now on, the connections open at this moment carry nothing in either direction. */
  void blackholeOpenConnections() {
    pipes.forEach(p -> p.blackholed = true);
  }

  private void acceptLoop() {
    while (!listener.isClosed()) {
      try {
        Socket client = listener.accept();
        Socket server = new Socket(targetHost, targetPort);
        accepted.incrementAndGet();
        Pipe pipe = new Pipe(client, server);
        pipes.add(pipe);
        pump(pipe, client, server, "up");
        pump(pipe, server, client, "down");
      } catch (IOException e) {
        return; // closed
      }
    }
  }

  private static void pump(Pipe pipe, Socket from, Socket to, String direction) {
    Thread t = new Thread(() -> {
      byte[] buffer = new byte[16 * 1024];
      try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
        int n;
        while ((n = in.read(buffer)) >= 0) {
          if (!pipe.blackholed) {
            out.write(buffer, 0, n);
            out.flush();
          }
        }
      } catch (IOException e) {
        // one side closed: the pipe ends
      } finally {
        pipe.close();
      }
    }, "test-proxy-" + direction);
    t.setDaemon(true);
    t.start();
  }

  @Override
  public void close() throws IOException {
    listener.close();
    pipes.forEach(Pipe::close);
  }

  private static final class Pipe {
    private final Socket client;
    private final Socket server;
    volatile boolean blackholed;

    Pipe(Socket client, Socket server) {
      this.client = client;
      this.server = server;
    }

    void close() {
      try {
        client.close();
        server.close();
      } catch (IOException e) {
        // closing anyway
      }
    }
  }
}
