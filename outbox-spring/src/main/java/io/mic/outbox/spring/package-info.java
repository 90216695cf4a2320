/**
 * Spring Boot integration: {@link io.mic.outbox.spring.TransactionalOutbox} appends in the Spring-managed
 * transaction, {@link io.mic.outbox.spring.OutboxAutoConfiguration} creates the store and a dispatcher
 * tied to the application context, configured by {@link io.mic.outbox.spring.OutboxProperties}
 * ({@code mic.outbox.*}).
 */
package io.mic.outbox.spring;
