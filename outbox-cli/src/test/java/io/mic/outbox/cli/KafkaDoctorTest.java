package io.mic.outbox.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.mic.outbox.OutboxEvent;
import io.mic.outbox.kafka.KafkaTestBroker;
import io.mic.outbox.test.OutboxTestDatabase;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** {@code doctor --kafka} on PostgreSQL and a real Kafka broker ({@link KafkaTestBroker}): one topic exists, one not. */
class KafkaDoctorTest {
  private final String suffix = UUID.randomUUID().toString().replace("-", "").substring(0, 10);
  private final OutboxTestDatabase postgres = OutboxTestDatabase.postgres();
  private final String table = postgres.newTable();
  private final String existing = "kdr" + suffix + ".created";
  private final String missing = "kdr" + suffix + ".missing";
  private String bootstrap;
  private Database db;

  @BeforeEach
  void connect() throws Exception {
    db = Database.connect(postgres.url(), postgres.user(), postgres.password(), table);
    db.store().createSchema();
    bootstrap = KafkaTestBroker.bootstrap();
    try (Admin admin = admin()) {
      admin.createTopics(List.of(new NewTopic(existing, 1, (short) 1))).all().get(30, TimeUnit.SECONDS);
    }
  }

  @AfterEach
  void cleanUp() throws Exception {
    if (bootstrap != null) {
      try (Admin admin = admin()) {
        admin.deleteTopics(Set.of(existing)).all().get(30, TimeUnit.SECONDS);
      }
    }
    if (db != null) {
      postgres.dropStore(table);
    }
  }

  @Test
  void kafkaTakesATopicOnlyWhenItExists() throws Exception {
    for (String topic : List.of(existing, missing)) {
      try (java.sql.Connection c = db.dataSource().getConnection()) {
        c.setAutoCommit(false);
        db.store().append(c, OutboxEvent.builder().aggregate("order", "o-1").topic(topic).payload("{}").build());
        c.commit();
      }
    }

    Run run = Run.on(postgres, table, "doctor", "--kafka", bootstrap);

    assertThat(line(run, "kafka:" + existing)).startsWith("PASS").contains("1 live event(s); ");
    assertThat(line(run, "kafka:" + missing)).startsWith("FAIL")
        .contains("Kafka topic '" + missing + "' does not exist at " + bootstrap + ": create it");
    assertThat(run.exitCode()).isEqualTo(MicOutbox.CHECK_FAILED);
    try (Admin admin = admin()) {
      assertThat(admin.listTopics().names().get(30, TimeUnit.SECONDS)).as("the check created no topic")
          .doesNotContain(missing);
    }
  }

  private static String line(Run run, String check) {
    return Arrays.stream(run.stdout().split("\n")).filter(l -> l.contains(" " + check + " ")).findFirst()
        .orElseThrow(() -> new AssertionError("no line for " + check + " in:\n" + run.stdout()));
  }

  private Admin admin() {
    return Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap));
  }
}
