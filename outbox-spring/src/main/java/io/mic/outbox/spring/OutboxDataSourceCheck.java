package io.mic.outbox.spring;

import io.mic.outbox.DispatchFn;
import io.mic.outbox.InvalidConfigurationException;
import io.mic.outbox.OutboxStore;
import javax.sql.DataSource;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.annotation.Bean;

/**
 * An application that publishes (it has a {@link DispatchFn} bean, its own or one built from
 * {@code mic.outbox.*}) but no outbox store, because {@link OutboxAutoConfiguration} found no single
 * {@link DataSource}: without this the outbox would simply not exist, without a log line. The start fails
 * instead, saying why and how to fix it.
 */
@AutoConfiguration(after = {OutboxAutoConfiguration.class, OutboxPublisherAutoConfiguration.class})
@ConditionalOnProperty(prefix = "mic.outbox", name = "enabled", havingValue = "true", matchIfMissing = true)
@ConditionalOnBean(DispatchFn.class)
@ConditionalOnMissingBean(OutboxStore.class)
public class OutboxDataSourceCheck {

  @Bean
  Object outboxDataSourceCheck(ListableBeanFactory beans) {
    String[] names = beans.getBeanNamesForType(DataSource.class);
    String found = names.length == 0
        ? "there is no DataSource bean (set spring.datasource.url with spring-boot-starter-jdbc on the classpath,"
            + " and do not exclude DataSourceAutoConfiguration)"
        : "there are " + names.length + " DataSource beans (" + String.join(", ", names) + ") and none is"
            + " @Primary (mark the outbox's DataSource @Primary)";
    throw new InvalidConfigurationException("mic-outbox: the outbox needs one DataSource, in whose transactions"
        + " events are appended, but " + found + "; or set mic.outbox.enabled=false and declare the outbox"
        + " beans yourself");
  }
}
