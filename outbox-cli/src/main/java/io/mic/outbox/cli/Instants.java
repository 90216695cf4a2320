package io.mic.outbox.cli;

import java.time.Instant;
import java.time.format.DateTimeParseException;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.TypeConversionException;

/** Instants in UTC, ISO-8601 ({@code 2026-09-29T08:00:00Z}). */
final class Instants implements ITypeConverter<Instant> {
  @Override
  public Instant convert(String value) {
    try {
      return Instant.parse(value);
    } catch (DateTimeParseException e) {
      throw new TypeConversionException("'" + value + "' is not an instant: use UTC ISO-8601, e.g."
          + " 2026-09-29T08:00:00Z");
    }
  }
}
