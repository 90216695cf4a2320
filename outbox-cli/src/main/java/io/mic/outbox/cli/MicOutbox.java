package io.mic.outbox.cli;

import io.mic.outbox.jdbc.OutboxStoreException;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.OutputStream;
import java.io.OutputStreamWriter;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import picocli.CommandLine;

/**
 * {@code mic-outbox}: the operations command of a MIC Outbox table.
 *
 * <pre>{@code
 * java -jar outbox-cli/target/mic-outbox.jar --jdbc-url jdbc:postgresql://db/app --user ops status
 * java -jar outbox-cli/target/mic-outbox.jar --jdbc-url jdbc:postgresql://db/app --user ops \
 *     pause --topic billing.issued --reason "billing consumer v2 deploy, ask #payments"
 * }</pre>
 *
 * <p>Exit codes: 0 done, 1 a check failed (a reconcile difference over the tolerance or a broker it cannot
 * read, a status limit exceeded, a dead letter that is not there, a doctor's WARN or FAIL), 2 bad arguments or a database that cannot be
 * used, 3 stdout refused the output. A reader that stops reading ({@code | head}) is no error.
 */
@Command(name = "mic-outbox", mixinStandardHelpOptions = true, sortOptions = false, version = "mic-outbox 0.1.0",
    description = "Operates a MIC Outbox table: status, dead letters, cluster-wide pauses, retention, archive,"
        + " reconciliation and the doctor's checks.",
    subcommands = {StatusCommand.class, DlqCommand.class, PauseCommand.class, ResumeCommand.class,
        PurgeCommand.class, ArchiveCommand.class, ReconcileCommand.class, DoctorCommand.class,
        CommandLine.HelpCommand.class},
    exitCodeListHeading = "%nExit codes:%n",
    exitCodeList = {
        "0:done",
        "1:a check failed (reconcile found a difference over --tolerance or cannot read the broker, a status"
            + " limit was exceeded, no such dead letter, doctor found a WARN or FAIL)",
        "2:bad arguments, or the database cannot be reached or used",
        "3:stdout refused the output (a full disk): what it shows is incomplete; what the command changed is done"},
    footerHeading = "%nEnvironment:%n",
    footer = {"MIC_OUTBOX_PASSWORD              the database password when --password is not given",
        "MIC_OUTBOX_CLICKHOUSE_PASSWORD   the ClickHouse password of archive"})
public final class MicOutbox implements Callable<Integer> {
  public static final int OK = 0;
  public static final int CHECK_FAILED = 1;
  public static final int BAD_INPUT = 2;
  /** stdout refused the output (a full disk, say): what it shows is incomplete. A closed pipe is no error. */
  public static final int OUTPUT_FAILED = 3;
  public static final String PASSWORD_ENV = "MIC_OUTBOX_PASSWORD";

  @Spec
  private CommandSpec spec;

  @Option(names = "--jdbc-url", required = true, paramLabel = "URL",
      description = "JDBC URL of the database: jdbc:postgresql://…, jdbc:mariadb://…, jdbc:mysql://… or jdbc:h2:…")
  String jdbcUrl;

  @Option(names = "--user", paramLabel = "NAME", description = "database user")
  String user;

  @Option(names = "--password", paramLabel = "SECRET", arity = "0..1", interactive = true,
      description = "database password (default: the environment variable " + PASSWORD_ENV
          + "); without a value it is asked for. Never printed.")
  String password;

  @Option(names = "--table", paramLabel = "NAME", defaultValue = "outbox",
      description = "the outbox table, optionally schema.table (default: ${DEFAULT-VALUE}); its control table is"
          + " <table>_control")
  String table;

  @Option(names = "--json", scope = CommandLine.ScopeType.INHERIT, // after the command's name too
      description = "machine-readable output: one JSON document on stdout")
  boolean json;

  PrintWriter out;
  PrintWriter err;
  Map<String, String> env;
  private Database database;

  /**
   * Runs the command; returns the exit code. {@code stdout} is written through {@link Stdout}, so a reader
   * that went away ends the output quietly; a {@link PrintStream} keeps its write errors to itself, which are
   * then found by {@link PrintStream#checkError()}.
   */
  public static int execute(String[] args, OutputStream stdout, PrintStream stderr, Map<String, String> env) {
    MicOutbox root = new MicOutbox();
    Stdout guarded = new Stdout(stdout);
    root.out = new PrintWriter(new OutputStreamWriter(guarded, StandardCharsets.UTF_8), true);
    root.err = new PrintWriter(new OutputStreamWriter(stderr, StandardCharsets.UTF_8), true);
    root.env = env;
    boolean jsonAsked = Arrays.asList(args).contains("--json"); // also when the arguments do not parse
    CommandLine cli = new CommandLine(root);
    cli.setOut(root.out);
    cli.setErr(root.err);
    cli.setParameterExceptionHandler((e, a) -> {
      root.err.println("mic-outbox: " + e.getMessage());
      root.err.println("Try 'mic-outbox --help' or 'mic-outbox help COMMAND' for the options.");
      return root.failed(jsonAsked, e.getMessage(), BAD_INPUT);
    });
    cli.setExecutionExceptionHandler((e, c, p) -> {
      root.err.println("mic-outbox: " + message(e));
      return root.failed(jsonAsked, message(e), e instanceof CheckFailedException ? CHECK_FAILED : BAD_INPUT);
    });
    int code;
    try {
      code = cli.execute(args);
    } finally {
      root.out.flush();
      root.err.flush();
    }
    if (guarded.refused() || (stdout instanceof PrintStream ps && ps.checkError())) {
      root.err.println("mic-outbox: stdout refused the output (a full disk, say): what it shows is incomplete; what"
          + " the command changed, if anything, is done");
      root.err.flush();
      return OUTPUT_FAILED;
    }
    return code;
  }

  /** With {@code --json}, the error as a document on stdout too, for a script that reads only stdout. */
  private int failed(boolean jsonAsked, String message, int code) {
    if (json || jsonAsked) {
      try (Json j = new Json(out)) {
        j.begin().field("error", message).field("exitCode", code).end();
      }
    }
    return code;
  }

  public static void main(String[] args) {
    System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");
    System.setProperty("org.slf4j.simpleLogger.logFile", "System.err");
    // the Kafka client warns on every reconnect attempt; reconcile reports an unreachable broker itself
    System.setProperty("org.slf4j.simpleLogger.log.org.apache.kafka", "error");
    // the descriptor itself, not System.out, whose PrintStream would hide which write error it met
    System.exit(execute(args, new FileOutputStream(FileDescriptor.out), System.err, System.getenv()));
  }

  @Override
  public Integer call() {
    throw new CommandLine.ParameterException(spec.commandLine(),
        "a command is required: status, dlq, pause, resume, purge, archive, reconcile or doctor");
  }

  /** The database of {@code --jdbc-url}, connected once; a failure to connect says what to fix. */
  Database database() {
    if (database == null) {
      String secret = password != null ? password : env.get(PASSWORD_ENV);
      database = Database.connect(jdbcUrl, user, secret, table);
    }
    return database;
  }

  /** What went wrong, without a stack trace and with any password in a URL masked. */
  static String message(Throwable e) {
    if (e instanceof UsageException || e instanceof CheckFailedException || e instanceof DatabaseException) {
      return OutboxStoreException.redact(e.getMessage());
    }
    return OutboxStoreException.describe(e);
  }
}
