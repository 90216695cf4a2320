package io.mic.replay;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** Runs the command as a separate process and keeps its exit code, stdout and stderr. */
record ReplayProcess(int exitCode, String stdout, String stderr) {

  static ReplayProcess run(List<String> command, Path workDir) throws IOException, InterruptedException {
    Path out = Files.createTempFile(workDir, "stdout", ".txt");
    Path err = Files.createTempFile(workDir, "stderr", ".txt");
    Process process = new ProcessBuilder(command).redirectOutput(out.toFile()).redirectError(err.toFile()).start();
    if (!process.waitFor(60, TimeUnit.SECONDS)) {
      process.destroyForcibly();
      throw new AssertionError("the command did not finish within 60 s: " + command);
    }
    return new ReplayProcess(process.exitValue(), Files.readString(out, StandardCharsets.UTF_8),
        Files.readString(err, StandardCharsets.UTF_8));
  }

  static String java() {
    return Path.of(System.getProperty("java.home"), "bin", "java").toString();
  }
}
