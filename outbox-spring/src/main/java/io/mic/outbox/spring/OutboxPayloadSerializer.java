package io.mic.outbox.spring;

import java.util.function.Function;

/**
 * Turns an object given to {@link TransactionalOutbox#append(String, String, String, Object)} into the event's
 * JSON payload. The auto-configuration declares one on the application's Jackson 3 {@code ObjectMapper} (the
 * one Spring Boot 4 configures, {@code spring.jackson.*} included) or, without that bean, on a default
 * {@code JsonMapper}; declare your own bean to serialize otherwise.
 *
 * <pre>{@code
 * @Bean
 * OutboxPayloadSerializer outboxPayloadSerializer(Gson gson) {
 *   return gson::toJson;
 * }
 * }</pre>
 */
@FunctionalInterface
public interface OutboxPayloadSerializer extends Function<Object, String> {}
