package io.mic.outbox.nats.internal;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class UrlsTest {

  @ParameterizedTest(name = "{0}")
  @CsvSource(delimiter = '|', quoteCharacter = '"', value = {
      "nats://127.0.0.1:4222                           | nats://127.0.0.1:4222",
      "nats://u:secret@h:4222                          | nats://***@h:4222",
      "tls://s3cr3t-token@h:4222                       | tls://***@h:4222",
      "nats://u:p1@h1:4222,nats://u:p2@h2:4222         | nats://***@h1:4222,nats://***@h2:4222",
      "\"nats://u:p1@h1:4222, nats://u:p2@h2:4222\"    | \"nats://***@h1:4222, nats://***@h2:4222\"",
      "nats://h0:4222,nats://u:p2@h2:4222              | nats://h0:4222,nats://***@h2:4222",
      "nats://u:p1@h1:4222,nats://h2:4222              | nats://***@h1:4222,nats://h2:4222",
      "nats://u:pa/ss@h:4222                           | nats://***@h:4222",
      "nats://u:pa/ss@h1:4222,nats://u:p/2@h2:4222     | nats://***@h1:4222,nats://***@h2:4222",
      "nats://u:p@ss@h:4222                            | nats://***@h:4222",
      "\"nats://u:p,ss@h:4222\"                        | nats://***@h:4222",
      "nats://u:a://b@h:4222                           | nats://***@h:4222",
      "u:secret@h:4222                                 | ***@h:4222",
      "nats://u:p1@h1:4222,u:p2@h2:4222                | nats://***@h1:4222,***@h2:4222",
      "nats://[::1]:4222                               | nats://[::1]:4222",
      "nats://u:p@[::1]:4222                           | nats://***@[::1]:4222",
  })
  void everyUserInfoOfEveryServerIsMasked(String url, String expected) {
    assertThat(Urls.redact(url)).isEqualTo(expected);
  }
}
