package io.mic.outbox.examples;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Every Java sample in docs/ is compiled code: the text between the markers {@code // docs/<file> <n>
 * begin} and {@code end}, de-indented by the marker's indentation, line for line. The markers are in
 * DocSamples and, for the recipes that need jOOQ, Hibernate or Spring (test dependencies only), in the
 * test sources of this package.
 */
class DocSamplesTest {
  private static final Pattern JAVA_BLOCK = Pattern.compile("```java\\n(.*?)```", Pattern.DOTALL);

  @Test
  void everyJavaSampleInTheDocsIsCompiledCode() throws IOException {
    List<String> source = new ArrayList<>();
    for (String dir : List.of("src/main/java/io/mic/outbox/examples", "src/test/java/io/mic/outbox/examples")) {
      try (Stream<Path> files = Files.list(Path.of(dir))) {
        for (Path file : files.filter(p -> p.toString().endsWith(".java")).sorted().toList()) {
          source.addAll(Files.readAllLines(file));
        }
      }
    }
    List<String> checked = new ArrayList<>();
    try (Stream<Path> docs = Files.list(Path.of("../docs"))) {
      for (Path doc : docs.filter(p -> p.toString().endsWith(".md")).sorted().toList()) {
        Matcher m = JAVA_BLOCK.matcher(Files.readString(doc));
        for (int n = 1; m.find(); n++) {
          String marker = "// docs/" + doc.getFileName() + " " + n;
          assertThat(m.group(1).stripTrailing()).as("sample %d of %s", n, doc.getFileName())
              .isEqualTo(compiled(source, marker));
          checked.add(doc.getFileName() + " " + n);
        }
      }
    }
    assertThat(checked).hasSize(28);
  }

  private static String compiled(List<String> source, String marker) {
    int begin = indexOf(source, marker + " begin");
    int end = indexOf(source, marker + " end");
    String indent = source.get(begin).substring(0, source.get(begin).indexOf("//"));
    return source.subList(begin + 1, end).stream()
        .map(line -> line.startsWith(indent) ? line.substring(indent.length()) : line.strip())
        .collect(Collectors.joining("\n")).stripTrailing();
  }

  private static int indexOf(List<String> lines, String marker) {
    for (int i = 0; i < lines.size(); i++) {
      if (lines.get(i).strip().equals(marker)) {
        return i;
      }
    }
    throw new AssertionError("no marker '" + marker + "' in DocSamples: add the sample there so it compiles");
  }
}
