package io.mic.outbox.jdbc;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.mic.outbox.OutboxDispatcher;
import java.io.FileOutputStream;
import java.nio.charset.StandardCharsets;

/**
 * A dispatcher process for {@link CrashWindowTest}: claims one batch and "publishes" slowly, appending
 * each event id to a file (flushed to disk) so the test knows what reached the broker before it kills
 * this process.
 *
 * <p>Arguments: jdbc-url user password table lease-millis publish-log [transactional], the last for a store
 * whose claims are held by transactions ({@code transactionalClaims(true)}).
 */
public final class CrashingDispatcherMain {
  public static void main(String[] args) throws Exception {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(args[0]);
    config.setUsername(args[1]);
    config.setPassword(args[2]);
    config.setMaximumPoolSize(3);
    config.addDataSourceProperty("ApplicationName", CrashWindowTest.childApplication(args[3]));
    try (HikariDataSource ds = new HikariDataSource(config);
        FileOutputStream log = new FileOutputStream(args[5], true)) {
      JdbcOutboxStore store = JdbcOutboxStore.builder().dataSource(ds).table(args[3])
          .transactionalClaims(args.length > 6 && args[6].equals("transactional")).build();
      OutboxDispatcher dispatcher = OutboxDispatcher.builder().store(store).useClaim(true).batchSize(100)
          .leaseTtl(java.time.Duration.ofMillis(Long.parseLong(args[4])))
          .dispatchFn(e -> {
            log.write((e.id() + "\n").getBytes(StandardCharsets.UTF_8));
            log.getFD().sync();
            Thread.sleep(150);
          }).build();
      dispatcher.dispatchOnce();
    }
  }
}
