/**
 * The test kit for applications that use MIC Outbox (add it in test scope):
 * {@link io.mic.outbox.test.OutboxTesting} waits for a drained outbox or dispatched events and dispatches
 * until empty, {@link io.mic.outbox.test.RecordingDispatchFn} records what was published,
 * {@link io.mic.outbox.test.FaultyPublisher} fails, goes down or hangs on purpose, and
 * {@link io.mic.outbox.test.OutboxTestDatabase} finds a test database.
 */
package io.mic.outbox.test;
