/**
 * A runnable demo: {@code java -jar outbox-examples/target/outbox-examples.jar}. It writes orders and
 * their events in one transaction each, dispatches them in per-aggregate order, absorbs a redelivered
 * duplicate with the inbox, and walks a poison event to the DLQ and back.
 */
package io.mic.outbox.examples;
