/** JDBC stores (PostgreSQL first) and the consumer inbox. Work in progress: see the project's open issues. */
package io.mic.outbox.jdbc;
