package io.mic.outbox.micrometer;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.mic.outbox.InMemoryOutboxStore;
import io.mic.outbox.OutboxDispatcher;
import io.mic.outbox.OutboxEvent;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The Grafana dashboard and the Prometheus rules shipped in this module's jar use only series that
 * {@link MicrometerOutboxMetrics} exports through Micrometer's Prometheus registry, and the rules pass
 * {@code promtool check rules} and the unit tests of {@code prometheus-rules-test.yml} (when promtool is
 * installed: Debian's {@code prometheus} package, which .ci/run installs; required under {@code CI=true}).
 */
class ShippedDashboardTest {
  private static final String DASHBOARD = "io/mic/outbox/micrometer/grafana-dashboard.json";
  private static final String RULES = "io/mic/outbox/micrometer/prometheus-rules.yml";
  private static final String RULES_TEST = "io/mic/outbox/micrometer/prometheus-rules-test.yml";
  private static final Pattern SERIES = Pattern.compile("mic_outbox_[a-z_]+");

  @TempDir Path dir;

  @Test
  void everySeriesTheDashboardAndTheRulesUseIsExported() throws IOException {
    Set<String> exported = exportedSeries();
    Set<String> used = new TreeSet<>();
    for (String expr : dashboardQueries()) {
      used.addAll(series(expr));
    }
    for (String line : text(RULES).split("\n")) {
      if (line.trim().startsWith("expr:")) {
        used.addAll(series(line));
      }
    }
    assertThat(used).as("series in the dashboard and the rules").hasSizeGreaterThan(10);
    assertThat(exported).as("exported by MicrometerOutboxMetrics").containsAll(used);
  }

  @Test
  void theRulesPassPromtool() throws Exception {
    String promtool = promtool();
    Files.writeString(dir.resolve("prometheus-rules.yml"), text(RULES));
    Files.writeString(dir.resolve("prometheus-rules-test.yml"), text(RULES_TEST));
    run(promtool, "check", "rules", "prometheus-rules.yml");
    run(promtool, "test", "rules", "prometheus-rules-test.yml");
  }

  /** The series a registry holds once one dispatcher has dispatched one event of one topic. */
  private static Set<String> exportedSeries() {
    PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    InMemoryOutboxStore store = new InMemoryOutboxStore();
    try (MicrometerOutboxMetrics metrics = MicrometerOutboxMetrics.builder().registry(registry).store(store).build()) {
      store.append(OutboxEvent.builder().aggregate("order", "1").topic("order.created").payload("{}").build());
      OutboxDispatcher.builder().store(store).dispatchFn(e -> {}).listener(metrics.listener()).build().dispatchOnce();
      return Arrays.stream(registry.scrape().split("\n")).filter(l -> !l.isBlank() && !l.startsWith("#"))
          .map(l -> l.split("[{ ]", 2)[0]).collect(Collectors.toCollection(TreeSet::new));
    }
  }

  /** Every {@code expr} and variable query of the dashboard; also proves the file is well-formed JSON. */
  private static List<String> dashboardQueries() throws IOException {
    List<String> queries = new ArrayList<>();
    try (JsonParser p = new JsonFactory().createParser(text(DASHBOARD))) {
      for (JsonToken t = p.nextToken(); t != null; t = p.nextToken()) {
        if (t == JsonToken.FIELD_NAME && Set.of("expr", "definition").contains(p.currentName())) {
          if (p.nextToken() == JsonToken.VALUE_STRING) {
            queries.add(p.getText());
          }
        }
      }
    }
    return queries;
  }

  private static Set<String> series(String expr) {
    Set<String> found = new TreeSet<>();
    Matcher m = SERIES.matcher(expr);
    while (m.find()) {
      found.add(m.group());
    }
    return found;
  }

  private static String text(String resource) throws IOException {
    try (InputStream in = ShippedDashboardTest.class.getClassLoader().getResourceAsStream(resource)) {
      assertThat(in).as(resource).isNotNull();
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
  }

  private static String promtool() {
    String path = System.getenv().getOrDefault("PATH", "");
    for (String d : path.split(File.pathSeparator)) {
      if (Files.isExecutable(Path.of(d, "promtool"))) {
        return Path.of(d, "promtool").toString();
      }
    }
    Assumptions.assumeFalse("true".equalsIgnoreCase(System.getenv("CI")),
        "promtool is required under CI: install Debian's prometheus package");
    Assumptions.abort("promtool not installed (Debian's prometheus package)");
    return null;
  }

  private void run(String... command) throws Exception {
    Process p = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(p.waitFor(60, TimeUnit.SECONDS)).as("%s finished", String.join(" ", command)).isTrue();
    assertThat(p.exitValue()).as("%s:%n%s", String.join(" ", command), out).isZero();
  }
}
