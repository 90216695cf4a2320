package io.mic.outbox.bench;

import jdk.jfr.Category;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;

/**
 * The timed part of one benchmark scenario, recorded in a Flight Recording when one runs, so that
 * {@link JfrSplit} can split the CPU samples per scenario. Costs nothing when no recording runs.
 */
@Name(ScenarioEvent.NAME)
@Label("Benchmark scenario")
@Category("MIC Outbox benchmarks")
final class ScenarioEvent extends Event {
  static final String NAME = "io.mic.outbox.bench.Scenario";

  @Label("Scenario")
  String scenario;

  ScenarioEvent(String scenario) {
    this.scenario = scenario;
  }
}
