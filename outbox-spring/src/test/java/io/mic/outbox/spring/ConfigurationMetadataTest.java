package io.mic.outbox.spring;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import io.mic.outbox.AsyncOutboxDispatcher;
import io.mic.outbox.OutboxDispatcher;
import io.mic.outbox.jdbc.JdbcOutboxStore;
import java.io.IOException;
import java.io.InputStream;
import java.lang.reflect.RecordComponent;
import java.net.URL;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.boot.context.properties.source.MapConfigurationPropertySource;
import org.springframework.boot.convert.DurationStyle;
import org.springframework.util.ClassUtils;
import org.springframework.util.ReflectionUtils;

/**
 * The IDE metadata of {@code mic.outbox.*} as the build wrote it ({@code META-INF/spring-configuration-metadata.json}
 * in the built classes): every property of {@link OutboxProperties}, nested ones too, is described with its
 * type, with the {@code @param} text of its record component and with the default that binding an empty
 * environment really yields.
 */
class ConfigurationMetadataTest {
  private static final String PREFIX = "mic.outbox";
  private static final Path SOURCES = Path.of("src/main/java/io/mic/outbox/spring");
  private static final Pattern RECORD = Pattern.compile("public (?:static )?record (\\w+)\\(");
  private static final Pattern PARAM = Pattern.compile("@param (\\w+) (.*?)(?=\\n\\s*@|$)", Pattern.DOTALL);

  @Test
  void everyPropertyIsDescribedWithItsTypeAndRealDefault() throws IOException {
    Map<String, Map<String, Object>> metadata = metadataProperties();
    Map<String, Object> defaults = new TreeMap<>();
    Map<String, Class<?>> types = new TreeMap<>();
    Map<String, String> descriptions = new TreeMap<>();
    collect(PREFIX, bound(), javadocParams(), defaults, types, descriptions);
    assertThat(defaults).containsKeys(PREFIX + ".enabled", PREFIX + ".table", PREFIX + ".use-claim",
        PREFIX + ".preserve-aggregate-order", PREFIX + ".workers", PREFIX + ".lease-ttl",
        PREFIX + ".poll-interval", PREFIX + ".create-schema", PREFIX + ".health.max-lag", // contract section 11
        PREFIX + ".rabbitmq.uri", PREFIX + ".rabbitmq.addresses", PREFIX + ".rabbitmq.exchange", PREFIX + ".nats.url",
        PREFIX + ".kafka.bootstrap-servers", PREFIX + ".kafka.properties", PREFIX + ".delete-on-dispatch",
        PREFIX + ".notify-on-append", PREFIX + ".batch-size", PREFIX + ".max-attempts");

    assertThat(metadata.keySet()).containsExactlyInAnyOrderElementsOf(defaults.keySet());
    for (Map.Entry<String, Object> p : defaults.entrySet()) {
      Map<String, Object> m = metadata.get(p.getKey());
      Class<?> type = types.get(p.getKey());
      // a collection's type carries its element types: java.util.List<java.lang.String>
      assertThat(((String) m.get("type")).replaceAll("<.*>$", "")).as(p.getKey() + " type")
          .isEqualTo(ClassUtils.resolvePrimitiveIfNecessary(type).getName());
      assertThat((String) m.get("description")).as(p.getKey() + " description").isNotBlank()
          .doesNotContain("{@").endsWith(".").isEqualTo(descriptions.get(p.getKey()));
      Object actual = p.getValue();
      if (Collection.class.isAssignableFrom(type) || Map.class.isAssignableFrom(type)) {
        // never null, so that the auto-configuration iterates it unchecked
        assertThat(actual instanceof Collection<?> c ? c.isEmpty() : actual instanceof Map<?, ?> map && map.isEmpty())
            .as(p.getKey() + " starts empty").isTrue();
        continue;
      }
      if (actual == null) {
        // no default: a broker's address (set it to build the publisher)
        assertThat(m).as(p.getKey() + " has no default").doesNotContainKey("defaultValue");
        continue;
      }
      assertThat(m).as(p.getKey() + " has a default").containsKey("defaultValue");
      Object declared = m.get("defaultValue");
      if (actual instanceof Duration d) {
        assertThat(DurationStyle.detectAndParse((String) declared)).as(p.getKey() + " default").isEqualTo(d);
      } else if (actual instanceof Number n) {
        assertThat(((Number) declared).longValue()).as(p.getKey() + " default").isEqualTo(n.longValue());
      } else {
        assertThat(declared).as(p.getKey() + " default").isEqualTo(actual);
      }
    }
  }

  /** {@code @DefaultValue} takes literals only: they must stay those of the library's constants. */
  @Test
  void theDefaultsAreTheLibrarysConstants() {
    OutboxProperties p = bound();
    assertThat(p.table()).isEqualTo(JdbcOutboxStore.DEFAULT_TABLE);
    assertThat(p.workers()).isEqualTo(AsyncOutboxDispatcher.DEFAULT_WORKERS);
    assertThat(p.leaseTtl()).isEqualTo(OutboxDispatcher.DEFAULT_LEASE_TTL);
    assertThat(p.pollInterval()).isEqualTo(AsyncOutboxDispatcher.DEFAULT_POLL_INTERVAL);
    assertThat(p.batchSize()).isEqualTo(OutboxDispatcher.DEFAULT_BATCH_SIZE);
    assertThat(p.maxAttempts()).isEqualTo(OutboxDispatcher.DEFAULT_MAX_ATTEMPTS);
    assertThat(p.shutdownTimeout()).isEqualTo(AsyncOutboxDispatcher.DEFAULT_SHUTDOWN_TIMEOUT);
    assertThat(p.retry().initialDelay()).isEqualTo(OutboxDispatcher.DEFAULT_RETRY_INITIAL);
    assertThat(p.retry().maxDelay()).isEqualTo(OutboxDispatcher.DEFAULT_RETRY_MAX);
  }

  /** The properties of an application that sets none, bound as at its start. */
  private static OutboxProperties bound() {
    return new Binder(new MapConfigurationPropertySource()).bindOrCreate(PREFIX, OutboxProperties.class);
  }

  /**
   * The record components of {@code properties}, as Spring binds them (kebab-case), recursing into nested groups,
   * with their @param text from {@code params} (record name, then component name).
   */
  private static void collect(String prefix, Record properties, Map<String, Map<String, String>> params,
      Map<String, Object> defaults, Map<String, Class<?>> types, Map<String, String> descriptions) {
    for (RecordComponent component : properties.getClass().getRecordComponents()) {
      String name = prefix + "." + kebab(component.getName());
      Object value = ReflectionUtils.invokeMethod(component.getAccessor(), properties);
      if (component.getType().isRecord()) {
        assertThat(value).as(name + " is bound even when no property is set").isNotNull();
        collect(name, (Record) value, params, defaults, types, descriptions);
      } else {
        defaults.put(name, value);
        types.put(name, component.getType());
        descriptions.put(name, params.getOrDefault(properties.getClass().getSimpleName(), Map.of())
            .get(component.getName()));
      }
    }
  }

  /** The @param texts of the records in this module's sources, whitespace collapsed as the processor does. */
  private static Map<String, Map<String, String>> javadocParams() throws IOException {
    Map<String, Map<String, String>> params = new LinkedHashMap<>();
    for (String file : List.of("OutboxProperties.java", "PublisherProperties.java")) {
      String source = Files.readString(SOURCES.resolve(file));
      Matcher record = RECORD.matcher(source);
      while (record.find()) {
        // the Javadoc the processor reads is the one right before the record
        String javadoc = source.substring(source.lastIndexOf("/**", record.start()) + 3,
            source.lastIndexOf("*/", record.start()));
        Map<String, String> texts = params.computeIfAbsent(record.group(1), r -> new LinkedHashMap<>());
        Matcher param = PARAM.matcher(javadoc.replaceAll("(?m)^\\s*\\* ?", ""));
        while (param.find()) {
          texts.put(param.group(1), param.group(2).replaceAll("\\s+", " ").trim());
        }
      }
    }
    assertThat(params).as("records in " + SOURCES.toAbsolutePath()).containsKeys("OutboxProperties", "Nats");
    return params;
  }

  private static String kebab(String camel) {
    return camel.replaceAll("([a-z0-9])([A-Z])", "$1-$2").toLowerCase(java.util.Locale.ROOT);
  }

  @SuppressWarnings("unchecked")
  private static Map<String, Map<String, Object>> metadataProperties() throws IOException {
    // this module's file, not the one of spring-boot-autoconfigure on the same class path
    String classes = OutboxProperties.class.getProtectionDomain().getCodeSource().getLocation().toString();
    URL url = null;
    for (URL u : Collections.list(ConfigurationMetadataTest.class.getClassLoader()
        .getResources("META-INF/spring-configuration-metadata.json"))) {
      if (u.toString().startsWith(classes) || u.toString().startsWith("jar:" + classes)) {
        url = u;
      }
    }
    assertThat(url).as("META-INF/spring-configuration-metadata.json in " + classes).isNotNull();
    try (InputStream in = url.openStream()) {
      try (JsonParser parser = new JsonFactory().createParser(in)) {
        parser.nextToken();
        Map<String, Object> root = (Map<String, Object>) read(parser);
        Map<String, Map<String, Object>> byName = new LinkedHashMap<>();
        for (Object o : (List<Object>) root.get("properties")) {
          Map<String, Object> p = (Map<String, Object>) o;
          byName.put((String) p.get("name"), p);
        }
        return byName;
      }
    }
  }

  private static Object read(JsonParser p) throws IOException {
    JsonToken t = p.currentToken();
    switch (t) {
      case START_OBJECT -> {
        Map<String, Object> map = new LinkedHashMap<>();
        while (p.nextToken() == JsonToken.FIELD_NAME) {
          String field = p.currentName();
          p.nextToken();
          map.put(field, read(p));
        }
        return map;
      }
      case START_ARRAY -> {
        List<Object> list = new ArrayList<>();
        while (p.nextToken() != JsonToken.END_ARRAY) {
          list.add(read(p));
        }
        return list;
      }
      case VALUE_STRING -> {
        return p.getText();
      }
      case VALUE_NUMBER_INT -> {
        return p.getLongValue();
      }
      case VALUE_TRUE, VALUE_FALSE -> {
        return p.getBooleanValue();
      }
      case VALUE_NULL -> {
        return null;
      }
      default -> throw new IllegalStateException("unexpected JSON token " + t);
    }
  }
}
