package io.mic.outbox.cli;

/**
 * Free text stored by someone else (a pause reason, a broker's error) as the human output shows it: on one
 * line, with no control character a terminal would obey. A reason holding {@code ESC [2J} must not clear the
 * operator's screen, nor a line break forge a line of the report. {@code --json} output needs none of this.
 */
final class Printable {
  private Printable() {}

  /** {@code text} with line breaks, tabs and every other control or bidirectional-override character escaped. */
  static String of(String text) {
    if (text == null) {
      return null;
    }
    StringBuilder out = new StringBuilder(text.length());
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      switch (c) {
        case '\n' -> out.append("\\n");
        case '\r' -> out.append("\\r");
        case '\t' -> out.append("\\t");
        case '\\' -> out.append("\\\\");
        default -> {
          if (Character.isISOControl(c) || (c >= '\u202a' && c <= '\u202e') || (c >= '\u2066' && c <= '\u2069')) {
            out.append(String.format("\\u%04x", (int) c));
          } else {
            out.append(c);
          }
        }
      }
    }
    return out.toString();
  }
}
