package io.mic.outbox.jdbc;

import io.mic.outbox.InvalidConfigurationException;

/**
 * The builder of an operator's tool that works on a store's table in batches ({@link OutboxDeadLetters},
 * {@link OutboxMaintenance}): the store, required, and the rows per statement, between 1 and the tool's
 * maximum.
 *
 * @param <B> the tool's builder, returned by every option
 * @param <T> the tool
 */
abstract class StoreToolBuilder<B extends StoreToolBuilder<B, T>, T> {
  private final int maxBatchSize;
  private JdbcOutboxStore store;
  private int batchSize;

  StoreToolBuilder(int defaultBatchSize, int maxBatchSize) {
    this.batchSize = defaultBatchSize;
    this.maxBatchSize = maxBatchSize;
  }

  /** Required: the store whose table, DataSource and dialect are used. */
  public B store(JdbcOutboxStore store) {
    this.store = store;
    return self();
  }

  /** Rows changed per statement: the tool's {@code DEFAULT_BATCH_SIZE}, at most its {@code MAX_BATCH_SIZE}. */
  public B batchSize(int batchSize) {
    this.batchSize = batchSize;
    return self();
  }

  /** @throws InvalidConfigurationException naming the option that is wrong */
  public T build() {
    if (store == null) {
      throw new InvalidConfigurationException("store is required: .store(jdbcOutboxStore)");
    }
    if (batchSize < 1 || batchSize > maxBatchSize) {
      throw new InvalidConfigurationException("batchSize must be between 1 and " + maxBatchSize
          + ", was " + batchSize);
    }
    return create(store, batchSize);
  }

  abstract T create(JdbcOutboxStore store, int batchSize);

  @SuppressWarnings("unchecked")
  private B self() {
    return (B) this;
  }
}
