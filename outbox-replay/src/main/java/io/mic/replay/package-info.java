/**
 * Time-range replay of archived events: {@link io.mic.replay.EventReplay} reads a JSON or ClickHouse
 * archive, keeps one topic and an inclusive time range, and republishes in {@code (created_at, id)} order;
 * {@link io.mic.replay.ReplayCommand} is the {@code mic-events-replay} command around it.
 */
package io.mic.replay;
