package io.mic.outbox.faults;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Comparator;
import java.util.stream.Stream;

/**
 * A PostgreSQL server of the suite's own, in a temporary directory on a free port, so the suite may
 * stop, crash and restart it while other users keep the shared server. Password authentication
 * (SCRAM) over TCP: the admin and the application role have test passwords, which the suite then looks
 * for in every log it captured. {@link #close()} stops the server and deletes its directory.
 */
public final class PrivatePostgres implements AutoCloseable {
  public static final String BIN = "/usr/lib/postgresql/15/bin";
  public static final String DATABASE = "faults";
  public static final String ADMIN = "postgres";
  public static final String APP_ROLE = "faults_app";

  private final Path dir;
  private final int port;
  private final String adminPassword;
  private final String appPassword;

  private PrivatePostgres(Path dir, int port, String adminPassword, String appPassword) {
    this.dir = dir;
    this.port = port;
    this.adminPassword = adminPassword;
    this.appPassword = appPassword;
  }

  /** Creates, starts and prepares a server; the passwords are the secrets no log may show. */
  public static PrivatePostgres start(String adminPassword, String appPassword) throws IOException, SQLException {
    Path dir = Files.createTempDirectory("mic-faults-pg-");
    Shell.run(10, "chown", "postgres:postgres", dir.toString());
    Path pwfile = dir.resolve("pwfile");
    Files.writeString(pwfile, adminPassword + "\n", StandardCharsets.UTF_8);
    Shell.run(10, "chown", "postgres:postgres", pwfile.toString());
    PrivatePostgres pg = new PrivatePostgres(dir, Shell.freePort(), adminPassword, appPassword);
    try {
      Shell.run(120, Shell.as("postgres", BIN + "/initdb", "-D", pg.data().toString(), "-U", ADMIN,
          "--pwfile=" + pwfile, "--auth-local=trust", "--auth-host=scram-sha-256", "-E", "UTF8", "--no-sync"));
      Files.delete(pwfile);
      pg.startServer();
      try (Connection c = pg.admin("postgres"); Statement s = c.createStatement()) {
        s.execute("CREATE ROLE " + APP_ROLE + " LOGIN PASSWORD '" + appPassword + "'");
        s.execute("CREATE DATABASE " + DATABASE + " OWNER " + APP_ROLE);
      }
      return pg;
    } catch (IOException | SQLException | RuntimeException e) {
      pg.close();
      throw e;
    }
  }

  private Path data() {
    return dir.resolve("data");
  }

  public int port() {
    return port;
  }

  /** The JDBC URL of the application database, with credentials, for worker processes. */
  public String appUrl(int port, String applicationName) {
    return "jdbc:postgresql://127.0.0.1:" + port + "/" + DATABASE + "?user=" + APP_ROLE + "&password=" + appPassword
        + "&ApplicationName=" + applicationName + "&socketTimeout=10&connectTimeout=5&tcpKeepAlive=true";
  }

  public String appUrl(String applicationName) {
    return appUrl(port, applicationName);
  }

  /** A superuser connection to the application database. */
  public Connection admin() throws SQLException {
    return admin(DATABASE);
  }

  private Connection admin(String database) throws SQLException {
    return DriverManager.getConnection("jdbc:postgresql://127.0.0.1:" + port + "/" + database + "?connectTimeout=5",
        ADMIN, adminPassword);
  }

  public void startServer() {
    Shell.run(120, Shell.as("postgres", BIN + "/pg_ctl", "-D", data().toString(), "-l", dir.resolve("server.log").toString(),
        "-w", "-t", "90", "-o", "-p " + port + " -k " + dir + " -c listen_addresses=127.0.0.1 -c fsync=on"
            + " -c synchronous_commit=on -c max_connections=60 -c shared_buffers=32MB", "start"));
  }

  /** Stops the server: {@code fast} (clean) or {@code immediate} (a crash: recovery on the next start). */
  public void stopServer(String mode) {
    Shell.run(120, Shell.as("postgres", BIN + "/pg_ctl", "-D", data().toString(), "-w", "-t", "90", "-m", mode, "stop"));
  }

  public String version() throws SQLException {
    try (Connection c = admin(); Statement s = c.createStatement(); var rs = s.executeQuery("SHOW server_version")) {
      rs.next();
      return "PostgreSQL " + rs.getString(1);
    }
  }

  public Path serverLog() {
    return dir.resolve("server.log");
  }

  @Override
  public void close() {
    try {
      if (Files.exists(data().resolve("postmaster.pid"))) {
        stopServer("immediate");
      }
    } catch (RuntimeException e) {
      System.err.println("could not stop the private PostgreSQL in " + dir + ": " + e.getMessage());
    } finally {
      try (Stream<Path> files = Files.walk(dir)) {
        files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
      } catch (IOException e) {
        System.err.println("could not delete " + dir + ": " + e.getMessage());
      }
    }
  }
}
