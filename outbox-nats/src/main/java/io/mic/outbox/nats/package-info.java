/** The NATS JetStream publisher. Work in progress: see the project's open issues. */
package io.mic.outbox.nats;
