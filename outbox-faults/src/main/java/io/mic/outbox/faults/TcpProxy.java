package io.mic.outbox.faults;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A loopback TCP proxy in front of the database or the broker that can delay traffic, hold it back (a
 * partition: the sockets stay open, nothing gets through until {@link #heal()}), reset every connection,
 * or cut a connection right after it forwarded a {@code COMMIT}. It can also hold back only the connections
 * whose client sent a given text (a {@code LISTEN}), leaving the others and new ones alone. Plain sockets, two
 * relay threads per connection.
 */
public final class TcpProxy implements AutoCloseable {
  private final ServerSocket server;
  private final int target;
  private final Set<Socket> sockets = ConcurrentHashMap.newKeySet();
  private final Set<Link> links = ConcurrentHashMap.newKeySet();
  /** Texts whose sending the proxy notes per connection, for {@link #blackholeConnectionsThatSent}. */
  private final List<String> watched = new CopyOnWriteArrayList<>();
  /** How many connections sent each watched text. */
  private final Map<String, Integer> sentBy = new ConcurrentHashMap<>();
  private final Object gate = new Object();
  private volatile long delayMillis;
  private volatile boolean blackhole;
  private final AtomicBoolean cutAfterCommit = new AtomicBoolean();
  private static final byte[] COMMIT = "COMMIT".getBytes(StandardCharsets.US_ASCII);
  private volatile boolean closed;

  public TcpProxy(int targetPort) throws IOException {
    this.target = targetPort;
    this.server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    Thread acceptor = new Thread(this::accept, "tcp-proxy-" + server.getLocalPort());
    acceptor.setDaemon(true);
    acceptor.start();
  }

  public int port() {
    return server.getLocalPort();
  }

  /** Every chunk waits this long before it is forwarded. */
  public void delay(long millis) {
    delayMillis = millis;
  }

  /** Nothing gets through, in either direction, until {@link #heal()}; connections stay open. */
  public void blackhole() {
    blackhole = true;
  }

  /** Forwards normally again, including what was held back. */
  public void heal() {
    delayMillis = 0;
    synchronized (gate) {
      blackhole = false;
      links.forEach(l -> l.held = false);
      gate.notifyAll();
    }
  }

  /** From now on, notes which connections' clients send {@code text} (e.g. {@code LISTEN}). */
  public void watch(String text) {
    watched.add(text);
  }

  /**
   * Nothing gets through, in either direction, on the open connections whose client sent the {@link #watch
   * watched} {@code text}, until {@link #heal()}; other connections and new ones pass. Returns how many.
   */
  public int blackholeConnectionsThatSent(String text) {
    int n = 0;
    synchronized (gate) {
      for (Link l : links) {
        if (l.sent.contains(text)) {
          l.held = true;
          n++;
        }
      }
    }
    return n;
  }

  /** How many connections, open or closed, had a client that sent the {@link #watch watched} {@code text}. */
  public int connectionsThatSent(String text) {
    return sentBy.getOrDefault(text, 0);
  }

  /** One client connection: the watched texts its client sent, and whether it alone is held back. */
  private static final class Link {
    final Set<String> sent = ConcurrentHashMap.newKeySet();
    volatile boolean held;
  }

  /**
   * Arms a cut of the next client connection that sends {@code COMMIT}: the chunk carrying it is forwarded
   * to the server, then the client's side is reset (RST) before any reply gets back. The server runs the
   * commit; the client only sees its connection break.
   */
  public void cutAfterCommit() {
    cutAfterCommit.set(true);
  }

  /** Whether an armed {@link #cutAfterCommit()} has happened. */
  public boolean commitCut() {
    return !cutAfterCommit.get();
  }

  /** Resets every open connection (RST, not FIN), as a crashed middlebox would. */
  public int resetAll() {
    int n = 0;
    for (Socket s : sockets) {
      try {
        s.setSoLinger(true, 0);
        s.close();
        n++;
      } catch (IOException e) {
        // already gone
      }
    }
    sockets.clear();
    return n;
  }

  private void accept() {
    while (!closed) {
      try {
        Socket client = server.accept();
        Socket upstream = new Socket(InetAddress.getLoopbackAddress(), target);
        sockets.add(client);
        sockets.add(upstream);
        Link link = new Link();
        links.add(link);
        AtomicBoolean cutting = new AtomicBoolean(); // this connection's COMMIT is on its way: no reply passes
        relay(client, upstream, client, cutting, link);
        relay(upstream, client, client, cutting, link);
      } catch (IOException e) {
        if (closed) {
          return;
        }
      }
    }
  }

  private void relay(Socket from, Socket to, Socket client, AtomicBoolean cutting, Link link) {
    boolean fromClient = from == client;
    Thread t = new Thread(() -> {
      byte[] buffer = new byte[16 * 1024];
      boolean cut = false;
      try {
        InputStream in = from.getInputStream();
        OutputStream out = to.getOutputStream();
        int n;
        while ((n = in.read(buffer)) >= 0) {
          if (fromClient) {
            noteWatched(buffer, n, link);
          }
          pass(link);
          // decided before the COMMIT goes: the server's reply can then never overtake the cut
          cut = fromClient && contains(buffer, n, COMMIT) && cutAfterCommit.compareAndSet(true, false);
          if (cut) {
            cutting.set(true);
          } else if (cutting.get()) {
            cut = true; // the server's reply to the COMMIT: dropped, and the client is left to the other relay's reset
            return;
          }
          out.write(buffer, 0, n);
          out.flush();
          if (cut) {
            // the server has the COMMIT; the client never hears back. The server's side stays open until
            // its reply comes: the other relay drops it and closes it then.
            client.setSoLinger(true, 0);
            client.close();
            return;
          }
        }
      } catch (IOException | InterruptedException e) {
        // the connection ended or was reset
      } finally {
        links.remove(link);
        closeQuietly(from);
        if (!cut) {
          closeQuietly(to);
        }
      }
    }, "tcp-proxy-relay");
    t.setDaemon(true);
    t.start();
  }

  private static boolean contains(byte[] buffer, int length, byte[] what) {
    outer:
    for (int i = 0; i + what.length <= length; i++) {
      for (int k = 0; k < what.length; k++) {
        if (buffer[i + k] != what[k]) {
          continue outer;
        }
      }
      return true;
    }
    return false;
  }

  private void noteWatched(byte[] buffer, int n, Link link) {
    for (String text : watched) {
      if (contains(buffer, n, text.getBytes(StandardCharsets.US_ASCII)) && link.sent.add(text)) {
        sentBy.merge(text, 1, Integer::sum);
      }
    }
  }

  private void pass(Link link) throws InterruptedException {
    synchronized (gate) {
      while ((blackhole || link.held) && !closed) {
        gate.wait();
      }
    }
    long d = delayMillis;
    if (d > 0) {
      Thread.sleep(d);
    }
  }

  private void closeQuietly(Socket s) {
    sockets.remove(s);
    try {
      s.close();
    } catch (IOException e) {
      // nothing left to do
    }
  }

  @Override
  public void close() throws IOException {
    closed = true;
    heal();
    server.close();
    resetAll();
  }
}
