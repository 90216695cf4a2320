package io.mic.outbox.cli;

import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.TypeConversionException;

/** Durations as operators type them ({@code 30s}, {@code 15m}, {@code 12h}, {@code 7d}) or ISO-8601 ({@code PT15M}). */
final class Durations implements ITypeConverter<Duration> {
  private static final Pattern SHORT = Pattern.compile("(\\d{1,9})(ms|s|m|h|d)");

  @Override
  public Duration convert(String value) {
    Matcher m = SHORT.matcher(value);
    if (m.matches()) {
      long n = Long.parseLong(m.group(1));
      return switch (m.group(2)) {
        case "ms" -> Duration.ofMillis(n);
        case "s" -> Duration.ofSeconds(n);
        case "m" -> Duration.ofMinutes(n);
        case "h" -> Duration.ofHours(n);
        default -> Duration.ofDays(n);
      };
    }
    try {
      return Duration.parse(value.toUpperCase(Locale.ROOT));
    } catch (DateTimeParseException e) {
      throw new TypeConversionException("'" + value + "' is not a duration: use e.g. 30s, 15m, 12h, 7d or PT15M");
    }
  }

  /** {@code 4m12.5s}, {@code 26h0m0s}: short and exact. */
  static String format(Duration d) {
    return d.toString().substring(2).toLowerCase(Locale.ROOT);
  }
}
