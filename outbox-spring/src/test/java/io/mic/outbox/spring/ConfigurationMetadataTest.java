package io.mic.outbox.spring;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import java.beans.PropertyDescriptor;
import java.io.IOException;
import java.io.InputStream;
import java.net.URL;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import org.springframework.beans.BeanUtils;
import org.springframework.beans.BeanWrapper;
import org.springframework.beans.PropertyAccessorFactory;
import org.springframework.boot.convert.DurationStyle;
import org.springframework.util.ClassUtils;

/**
 * The IDE metadata of {@code mic.outbox.*} as the build wrote it ({@code META-INF/spring-configuration-metadata.json}
 * in the built classes): every property of {@link OutboxProperties}, nested ones too, is described with its
 * type and with the default that a fresh {@code OutboxProperties} really has.
 */
class ConfigurationMetadataTest {
  private static final String PREFIX = "mic.outbox";

  @Test
  void everyPropertyIsDescribedWithItsTypeAndRealDefault() throws IOException {
    Map<String, Map<String, Object>> metadata = metadataProperties();
    Map<String, Object> defaults = new TreeMap<>();
    Map<String, Class<?>> types = new TreeMap<>();
    collect(PREFIX, new OutboxProperties(), defaults, types);
    assertThat(defaults).containsKeys(PREFIX + ".enabled", PREFIX + ".table", PREFIX + ".use-claim",
        PREFIX + ".preserve-aggregate-order", PREFIX + ".workers", PREFIX + ".lease-ttl",
        PREFIX + ".poll-interval", PREFIX + ".create-schema", PREFIX + ".health.max-lag", // contract section 11
        PREFIX + ".rabbitmq.uri", PREFIX + ".rabbitmq.addresses", PREFIX + ".rabbitmq.exchange", PREFIX + ".nats.url",
        PREFIX + ".kafka.bootstrap-servers", PREFIX + ".kafka.properties", PREFIX + ".delete-on-dispatch",
        PREFIX + ".notify-on-append", PREFIX + ".batch-size", PREFIX + ".max-attempts");

    assertThat(metadata.keySet()).containsExactlyInAnyOrderElementsOf(defaults.keySet());
    for (Map.Entry<String, Object> p : defaults.entrySet()) {
      Map<String, Object> m = metadata.get(p.getKey());
      // a collection's type carries its element types: java.util.List<java.lang.String>
      assertThat(((String) m.get("type")).replaceAll("<.*>$", "")).as(p.getKey() + " type")
          .isEqualTo(ClassUtils.resolvePrimitiveIfNecessary(types.get(p.getKey())).getName());
      assertThat((String) m.get("description")).as(p.getKey() + " description").isNotBlank()
          .doesNotContain("{@").endsWith(".");
      Object actual = p.getValue();
      if (actual == null || actual instanceof Collection<?> || actual instanceof Map<?, ?>) {
        // no default: a broker's address (set it to build the publisher), or an empty list or map
        assertThat(actual == null || (actual instanceof Collection<?> c ? c.isEmpty() : ((Map<?, ?>) actual).isEmpty()))
            .as(p.getKey() + " starts empty").isTrue();
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

  /** The bean properties of {@code bean}, as Spring binds them (kebab-case), recursing into nested groups. */
  private static void collect(String prefix, Object bean, Map<String, Object> defaults, Map<String, Class<?>> types) {
    BeanWrapper w = PropertyAccessorFactory.forBeanPropertyAccess(bean);
    for (PropertyDescriptor d : w.getPropertyDescriptors()) {
      if (d.getReadMethod() == null || d.getName().equals("class")) {
        continue;
      }
      String name = prefix + "." + kebab(d.getName());
      Object value = w.getPropertyValue(d.getName());
      if (d.getWriteMethod() == null && !BeanUtils.isSimpleValueType(d.getPropertyType())
          && !Collection.class.isAssignableFrom(d.getPropertyType()) && !Map.class.isAssignableFrom(d.getPropertyType())) {
        collect(name, value, defaults, types); // a nested group such as health
      } else {
        defaults.put(name, value);
        types.put(name, d.getPropertyType());
      }
    }
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
