/** A runnable demo on the embedded default. Work in progress: see the project's open issues. */
package io.mic.outbox.examples;
