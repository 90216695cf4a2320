package io.mic.outbox.examples;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/** The README's usage example is the compiled code in ReadmeExample, line for line. */
class ReadmeExampleTest {
  @Test
  void readmeShowsTheCompiledExample() throws IOException {
    List<String> source = Files.readAllLines(Path.of("src/main/java/io/mic/outbox/examples/ReadmeExample.java"));
    String compiled = source.subList(indexOf(source, "// README begin") + 1, indexOf(source, "// README end"))
        .stream().map(line -> line.length() >= 4 ? line.substring(4) : line.strip()).collect(Collectors.joining("\n"));
    String readme = Files.readString(Path.of("../README.md"));
    assertThat(readme).contains(compiled);
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
