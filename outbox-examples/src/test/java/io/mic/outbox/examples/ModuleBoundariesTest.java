package io.mic.outbox.examples;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * No module names another module's {@code …internal} package, in an import or a qualified name, in main or
 * test code: what a module keeps internal can change without breaking the others. The modules are the
 * directories beside this one with a {@code src}; a module's own internal packages are those its sources
 * declare. This module depends on nearly every other, so the full build always runs this check.
 */
class ModuleBoundariesTest {
  private static final Pattern INTERNAL = Pattern.compile("\\bio\\.mic(?:\\.[a-z0-9_]+)*?\\.internal\\b");
  private static final Pattern PACKAGE = Pattern.compile("^package\\s+([a-z0-9_.]+)\\s*;", Pattern.MULTILINE);

  /**
   * Files allowed to cross a boundary, each with its reason. Keep it empty; an entry is a debt, not a rule.
   */
  private static final Set<String> ALLOWED = Set.of(
      // a micro-benchmark of jdbc's internal header codec; the benchmarks are a harness, not the library
      "outbox-benchmarks/src/main/java/io/mic/outbox/bench/micro/HeadersJsonBenchmark.java");

  @Test
  void noModuleNamesAnotherModulesInternalPackage() throws IOException {
    Path root = Path.of("..").toAbsolutePath().normalize();
    List<String> crossings = new ArrayList<>();
    Set<String> allowedSeen = new TreeSet<>();
    int files = 0;
    try (Stream<Path> modules = Files.list(root)) {
      for (Path module : modules.filter(m -> Files.isDirectory(m.resolve("src"))).sorted().toList()) {
        List<Path> sources = javaFiles(module.resolve("src"));
        files += sources.size();
        Set<String> own = new TreeSet<>();
        for (Path file : sources) {
          Matcher p = PACKAGE.matcher(Files.readString(file));
          if (p.find()) {
            own.add(p.group(1));
          }
        }
        for (Path file : sources) {
          String name = root.relativize(file).toString().replace('\\', '/');
          Matcher m = INTERNAL.matcher(Files.readString(file));
          while (m.find()) {
            if (own.contains(m.group())) {
              continue;
            }
            if (ALLOWED.contains(name)) {
              allowedSeen.add(name);
            } else {
              crossings.add(name + " names " + m.group());
            }
          }
        }
      }
    }
    assertThat(files).as("Java files scanned under " + root).isGreaterThan(300);
    assertThat(crossings).as("another module's internal package is used; depend on its public API instead")
        .isEmpty();
    assertThat(allowedSeen).as("ALLOWED lists a file that no longer crosses a boundary: remove it from ALLOWED")
        .containsExactlyInAnyOrderElementsOf(ALLOWED);
  }

  private static List<Path> javaFiles(Path dir) {
    try (Stream<Path> all = Files.walk(dir)) {
      return all.filter(f -> f.toString().endsWith(".java")).sorted().toList();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
