/**
 * Micrometer binding for MIC Outbox: counters and timers fed by an {@link io.mic.outbox.OutboxListener},
 * and gauges over the store that read it at most once per refresh interval. Entry point:
 * {@link io.mic.outbox.micrometer.MicrometerOutboxMetrics}.
 */
package io.mic.outbox.micrometer;
