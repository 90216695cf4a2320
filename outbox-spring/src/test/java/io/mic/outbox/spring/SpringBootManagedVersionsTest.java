package io.mic.outbox.spring;

import static java.util.Map.entry;
import static org.assertj.core.api.Assertions.assertThat;

import java.io.File;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import javax.xml.parsers.DocumentBuilderFactory;
import org.junit.jupiter.api.Test;
import org.w3c.dom.Element;
import org.w3c.dom.Node;
import org.w3c.dom.NodeList;

/**
 * outbox-spring is tested on the versions a Spring Boot application gets from spring-boot-dependencies. Its
 * pom.xml imports that BOM, and sets Boot's versions for the libraries the parent pins itself, which an
 * import cannot override: when {@code spring-boot.version} moves, this test names each property to follow.
 */
class SpringBootManagedVersionsTest {
  /** The libraries the parent pins itself, each with the property that holds its version in spring-boot-dependencies. */
  private static final Map<String, String> BOOT_PROPERTIES = Map.ofEntries(
      entry("com.rabbitmq:amqp-client", "rabbit-amqp-client.version"),
      entry("org.apache.kafka:kafka-clients", "kafka.version"),
      entry("org.apache.kafka:kafka_2.13", "kafka.version"),
      entry("com.fasterxml.jackson.core:jackson-core", "jackson-2-bom.version"),
      entry("tools.jackson.core:jackson-databind", "jackson-bom.version"),
      entry("tools.jackson.core:jackson-core", "jackson-bom.version"),
      entry("io.opentelemetry:opentelemetry-api", "opentelemetry.version"),
      entry("com.zaxxer:HikariCP", "hikaricp.version"),
      entry("org.postgresql:postgresql", "postgresql.version"),
      entry("io.micrometer:micrometer-core", "micrometer.version"),
      entry("org.slf4j:slf4j-api", "slf4j.version"),
      entry("org.springframework:spring-jdbc", "spring-framework.version"),
      entry("org.springframework.amqp:spring-rabbit", "spring-amqp.version"),
      entry("org.springframework.kafka:spring-kafka", "spring-kafka.version"),
      entry("org.junit.jupiter:junit-jupiter-api", "junit-jupiter.version"),
      entry("org.assertj:assertj-core", "assertj.version"),
      entry("org.awaitility:awaitility", "awaitility.version"),
      entry("org.testcontainers:testcontainers", "testcontainers.version"),
      entry("org.testcontainers:testcontainers-postgresql", "testcontainers.version"),
      entry("org.testcontainers:testcontainers-mariadb", "testcontainers.version"));
  /** Every artifact of these groups on the test classpath, under any name, has the version of the property. */
  private static final Map<String, String> BOOT_GROUPS = Map.of("org.testcontainers", "testcontainers.version");

  @Test
  void theTestClasspathHasTheVersionsSpringBootManages() throws Exception {
    Path repository = Path.of(System.getProperty("mic.local-repository")).toAbsolutePath().normalize();
    String bootVersion = System.getProperty("mic.spring-boot.version");
    Properties managed = bootProperties(repository.resolve("org/springframework/boot/spring-boot-dependencies")
        .resolve(bootVersion).resolve("spring-boot-dependencies-" + bootVersion + ".pom"));
    Map<String, String> onClasspath = versionsOnTheClasspath(repository);

    Map<String, String> differences = new TreeMap<>();
    BOOT_PROPERTIES.forEach((artifact, property) -> {
      String boot = managed.getProperty(property);
      assertThat(boot).as("spring-boot-dependencies %s has no property %s", bootVersion, property).isNotNull();
      assertThat(onClasspath).as("the test classpath").containsKey(artifact);
      if (!boot.equals(onClasspath.get(artifact))) {
        differences.put(artifact, onClasspath.get(artifact) + " where Spring Boot " + bootVersion + " manages "
            + boot + " (its " + property + "): set the version property in outbox-spring/pom.xml");
      }
    });
    onClasspath.forEach((artifact, version) -> {
      String property = BOOT_GROUPS.get(artifact.substring(0, artifact.indexOf(':')));
      if (property != null && !version.equals(managed.getProperty(property))) {
        differences.put(artifact, version + " where Spring Boot " + bootVersion + " manages "
            + managed.getProperty(property) + " for the whole group (its " + property + "): a module its BOM does"
            + " not manage, such as a Testcontainers 1.x name");
      }
    });
    assertThat(differences).isEmpty();
  }

  private static Properties bootProperties(Path bom) throws Exception {
    assertThat(bom).as("the spring-boot-dependencies BOM that outbox-spring/pom.xml imports").isRegularFile();
    Properties properties = new Properties();
    try (InputStream in = Files.newInputStream(bom)) {
      Element project = DocumentBuilderFactory.newInstance().newDocumentBuilder().parse(in).getDocumentElement();
      NodeList nodes = project.getElementsByTagName("properties").item(0).getChildNodes();
      for (int i = 0; i < nodes.getLength(); i++) {
        if (nodes.item(i).getNodeType() == Node.ELEMENT_NODE) {
          properties.setProperty(nodes.item(i).getNodeName(), nodes.item(i).getTextContent().trim());
        }
      }
    }
    return properties;
  }

  /** groupId:artifactId to version, for every jar of the local repository on the test classpath. */
  private static Map<String, String> versionsOnTheClasspath(Path repository) {
    String classpath = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
    Map<String, String> versions = new HashMap<>();
    for (String entry : classpath.split(File.pathSeparator)) {
      Path jar = Path.of(entry).toAbsolutePath().normalize();
      if (!jar.startsWith(repository) || !jar.toString().endsWith(".jar")) {
        continue; // the reactor's own modules
      }
      Path relative = repository.relativize(jar); // group/path/artifactId/version/artifactId-version.jar
      int n = relative.getNameCount();
      List<String> group = new ArrayList<>();
      relative.subpath(0, n - 3).forEach(p -> group.add(p.toString()));
      versions.put(String.join(".", group) + ":" + relative.getName(n - 3), relative.getName(n - 2).toString());
    }
    return versions;
  }
}
