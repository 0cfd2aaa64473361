@component:agent @component:runtime @component:agent-events
Feature: Node agent event recording
  The node agent limits the events it records with --event-qps and --event-burst, a token bucket
  of its own; 0 means 5 per second and a burst of 10. Twenty pods whose containers each take 100ms
  to start make events faster than either rate for about two seconds.

  Background:
    Given the agent writes the events it creates on its output
    And a container runtime
    And the runtime's script:
      """
      faults:
      - {method: StartContainer, latency: 100ms}
      """
    And manifests for 20 pods named "p"

  @rule:events.agent.rate-limit
  Scenario: Events beyond --event-burst and --event-qps are not recorded
    When the agent runs with "--pod-manifest-path={manifests} --event-qps=2 --event-burst=4"
    Then the agent reports 20 pods Running and 0 rejected with "OutOfpods"
    And the agent's events keep to a burst of 4 and 2 per second

  @rule:orchlet.option.event-qps.zero-means-5 @rule:orchlet.option.event-burst.zero-means-10 @rule:limits.agent.event-rate-zero
  Scenario: --event-qps 0 and --event-burst 0 record a burst of 10 and 5 events per second
    When the agent runs with "--pod-manifest-path={manifests} --event-qps=0 --event-burst=0"
    Then the agent reports 20 pods Running and 0 rejected with "OutOfpods"
    And the agent's events keep to a burst of 10 and 5 per second
