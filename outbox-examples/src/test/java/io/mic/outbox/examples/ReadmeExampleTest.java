package io.mic.outbox.examples;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * The README's Java samples are compiled code, line for line: the plain Java example and the consumers in
 * ReadmeExample, the Spring Boot example in ReadmeSpringExample (test sources, where Spring is).
 */
class ReadmeExampleTest {
  private static final Path MAIN = Path.of("src/main/java/io/mic/outbox/examples/ReadmeExample.java");
  private static final Path SPRING = Path.of("src/test/java/io/mic/outbox/examples/ReadmeSpringExample.java");

  @Test
  void readmeShowsTheCompiledExample() throws IOException {
    assertThat(readme()).contains(compiled(MAIN, "// README"));
  }

  @Test
  void readmeShowsTheCompiledConsumers() throws IOException {
    assertThat(readme()).contains(compiled(MAIN, "// README consumers"));
  }

  @Test
  void readmeShowsTheCompiledKafkaConsumer() throws IOException {
    assertThat(readme()).contains(compiled(MAIN, "// README kafka"));
  }

  @Test
  void readmeShowsTheCompiledSpringExample() throws IOException {
    assertThat(readme()).contains(compiled(SPRING, "// README spring"));
  }

  private static String readme() throws IOException {
    return Files.readString(Path.of("../README.md"));
  }

  /** The lines between the marker's begin and end, de-indented by the marker's indentation. */
  private static String compiled(Path file, String marker) throws IOException {
    List<String> source = Files.readAllLines(file);
    int begin = indexOf(source, marker + " begin");
    String indent = source.get(begin).substring(0, source.get(begin).indexOf("//"));
    return source.subList(begin + 1, indexOf(source, marker + " end")).stream()
        .map(line -> line.startsWith(indent) ? line.substring(indent.length()) : line.strip())
        .collect(Collectors.joining("\n"));
  }

  private static int indexOf(List<String> lines, String marker) {
    for (int i = 0; i < lines.size(); i++) {
      if (lines.get(i).strip().equals(marker)) {
        return i;
      }
    }
    throw new AssertionError("marker " + marker + " missing");
  }
}
